package federation

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
)

// Home is the region that keeps key's global state among regions: the one
// whose rendezvous score for the key is highest (ties, impossible in
// practice, to the first name). Every region computes the same home from
// the same names, whatever their order; adding or removing a region moves
// only the keys whose home it becomes or was.
func Home(key []byte, regions []string) string {
	var best string
	var top uint64
	for _, r := range regions {
		h := fnv.New64a()
		h.Write([]byte(r))
		h.Write([]byte{0})
		h.Write(key)
		if s := mix(h.Sum64()); best == "" || s > top || (s == top && r < best) {
			best, top = r, s
		}
	}
	return best
}

// mix is splitmix64's finaliser: FNV's low bits vary little between
// similar inputs, and the score compares whole words.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// authContext separates the link's MACs from any other use of the secret.
const authContext = "rlserver federation link v1"

// newNonce is a fresh challenge.
func newNonce() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// authMAC is the answer to nonce for region: an HMAC-SHA256 of both under
// the secret, in hex.
func authMAC(secret, nonce, region string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(authContext))
	m.Write([]byte{0})
	m.Write([]byte(nonce))
	m.Write([]byte{0})
	m.Write([]byte(region))
	return hex.EncodeToString(m.Sum(nil))
}

// checkMAC reports whether mac answers nonce for region, in constant time.
func checkMAC(secret, nonce, region, mac string) bool {
	return hmac.Equal([]byte(mac), []byte(authMAC(secret, nonce, region)))
}
