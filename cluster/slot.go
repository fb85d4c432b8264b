package cluster

import "sync"

// SlotCount is the number of hash slots, as in Redis Cluster.
const SlotCount = 16384

// ShardBits is how many bits a shard number takes at most: a node has from 1
// to MaxShards shards. The server's SCAN cursor carries the shard in that
// many low bits, so the bound is part of the protocol, not only a setting.
const ShardBits = 10

// MaxShards is the most shards a node may have.
const MaxShards = 1 << ShardBits

// crc16Table is CRC16-XMODEM (polynomial 0x1021, initial value 0), the
// checksum Redis Cluster hashes keys with.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^c]
	}
	return crc
}

// Slot returns key's hash slot. When the key has a '{' followed later by a
// '}' with at least one byte between them, only the bytes between the first
// '{' and the first '}' after it are hashed, so {user:ada}:sec and
// {user:ada}:min share a slot.
func Slot(key []byte) uint16 {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				return crc16(key) % SlotCount
			}
		}
		break
	}
	return crc16(key) % SlotCount
}

// ShardOfSlot returns the shard that owns slot when the slots are split into
// shards contiguous ranges of (nearly) equal size.
func ShardOfSlot(slot uint16, shards int) int {
	return int(slot) * shards / SlotCount
}

// SlotRange returns the first and last slot of shard.
func SlotRange(shard, shards int) (first, last int) {
	first = (shard*SlotCount + shards - 1) / shards
	last = ((shard+1)*SlotCount+shards-1)/shards - 1
	return first, last
}

// SlotTag returns a short hash tag of slot: a string without braces whose
// own slot is slot, so that any key that starts with "{" + SlotTag(s) + "}"
// hashes to s. A reservation's id starts with its key's (see commands'
// AppendReservationID), so that a cluster client routes RL.SETTLE, whose
// first argument is the id, to the shard that holds the reservation.
func SlotTag(slot uint16) string {
	slotTagsOnce.Do(findSlotTags)
	return slotTags[slot%SlotCount]
}

var (
	slotTagsOnce sync.Once
	slotTags     [SlotCount]string
)

// findSlotTags gives every slot the first string of digits and lower-case
// letters, shortest first, that hashes to it: four characters are enough
// for all of them, and finding them takes a few milliseconds.
func findSlotTags() {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	found := 0
	buf := make([]byte, 0, 4)
	var walk func(depth int)
	walk = func(depth int) {
		if found == SlotCount {
			return
		}
		if len(buf) == depth {
			if s := crc16(buf) % SlotCount; slotTags[s] == "" {
				slotTags[s] = string(buf)
				found++
			}
			return
		}
		for i := range len(alphabet) {
			buf = append(buf, alphabet[i])
			walk(depth)
			buf = buf[:len(buf)-1]
		}
	}
	for depth := 1; found < SlotCount; depth++ {
		walk(depth)
	}
}
