package engine

import "encoding/binary"

// appendEntry appends the canonical encoding of e: its kind, key, parameters
// and state as varints, then its log. The digest hashes it: replicas that
// applied the same commands encode every key alike.
func appendEntry(b []byte, e *entry) []byte {
	b = append(b, byte(e.kind))
	b = binary.AppendUvarint(b, uint64(len(e.key)))
	b = append(b, e.key...)
	for _, v := range e.params {
		b = binary.AppendVarint(b, v)
	}
	for _, v := range e.state {
		b = binary.AppendVarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(e.log)))
	for _, le := range e.log {
		b = binary.AppendVarint(b, le.At)
		b = binary.AppendVarint(b, le.N)
	}
	return b
}
