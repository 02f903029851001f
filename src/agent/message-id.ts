/**
 * The id of a recorded message (`user/message`, `user/steer`, `assistant/message`): `msg_` and a
 * random RFC 4122 version 4 UUID, as `crypto.randomUUID()` makes it.
 *
 * Why not `msg_${randomUUID()}`: node builds that UUID from sixteen two-digit strings, and the
 * prefix makes one more, every one a string to collect, twice a turn. Here the 40 characters are
 * written into one buffer and read out as one string. The randomness is the same: 16 bytes of
 * node's CSPRNG (`randomFillSync`) per id, drawn in batches as `randomUUID` draws them, with the
 * version and variant bits set as RFC 4122 says.
 */
import { randomFillSync } from "node:crypto";

const IDS_PER_DRAW = 128;
const random = Buffer.alloc(16 * IDS_PER_DRAW);
let drawn = IDS_PER_DRAW;
const text = Buffer.from("msg_00000000-0000-4000-8000-000000000000", "latin1");
const HEX = Buffer.from("0123456789abcdef", "latin1");
/** Where each of the 16 bytes' two hex digits go in `text`. */
const AT = [4, 6, 8, 10, 13, 15, 18, 20, 23, 25, 28, 30, 32, 34, 36, 38];

export function newMessageId(): string {
  if (drawn === IDS_PER_DRAW) {
    randomFillSync(random);
    drawn = 0;
  }
  const from = 16 * drawn++;
  // Version 4 in byte 6's high nibble, the variant 10xx in byte 8's two high bits.
  random[from + 6] = (random[from + 6] & 0x0f) | 0x40;
  random[from + 8] = (random[from + 8] & 0x3f) | 0x80;
  for (let i = 0; i < 16; i++) {
    const byte = random[from + i];
    text[AT[i]] = HEX[byte >> 4];
    text[AT[i] + 1] = HEX[byte & 0x0f];
  }
  return text.toString("latin1");
}
