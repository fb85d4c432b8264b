// Package backup is rlserver's backup file: every shard's state at one
// committed index, as `rlserver backup` writes it and `rlserver restore`
// reads it (cmd/rlserver), with the client that fetches the shards from a
// running cluster (client.go).
//
// A backup file is, with integers big endian:
//
//	header   "RLBACKUP"          magic, 8 bytes
//	         version   uint16    FormatVersion (1)
//	         created   int64     when the backup started, Unix ms
//	         shards    uint32    the cluster's shard count
//	         source    uint16 length, bytes: the address it was taken from
//	         release   uint16 length, bytes: the rlserver version that wrote it
//	shard    "SHRD"              one section per shard, shards 0, 1, ... in order
//	         shard     uint32
//	         index     uint64    the Raft index of the state (0: a memory node)
//	         term      uint64    its Raft term
//	         time      int64     the shard's clock at that index, Unix ms
//	         taken     int64     when the leader took it, Unix ms
//	         length    uint64    bytes of frame
//	         frame               the shard's state as a snapshot frame
//	                             (persistence.WriteSnapshot: versioned, its
//	                             own CRC-32C)
//	         crc       uint32    CRC-32C of the section, "SHRD" to the frame's end
//	trailer  "END."
//	         shards    uint32    sections written, again
//	         crc       uint32    CRC-32C of every byte before the trailer
//
// A reader refuses a file that is not a backup, of a later version, damaged
// (a checksum, a shard out of order, a length past its bound) or truncated
// (it ends before its trailer), with errors that say which; a file with
// bytes after its trailer is damaged too.
package backup

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/rlserver/rlserver/persistence"
)

// FormatVersion is the backup format this rlserver writes, and the latest it
// reads.
const FormatVersion = 1

const (
	magic        = "RLBACKUP"
	sectionMagic = "SHRD"
	trailerMagic = "END."
	// maxShards and maxString bound what a damaged header can make a
	// reader expect.
	maxShards = 1 << 16
	maxString = 1 << 12
	// maxFrame bounds a section's frame: a snapshot's largest payload and
	// its framing.
	maxFrame = persistence.MaxSnapshotSize + 64
)

// Errors a reader returns (wrapped, with what it found); each wraps
// ErrBadBackup.
var (
	ErrBadBackup = errors.New("bad backup file")
	ErrNotBackup = fmt.Errorf("%w: not an rlserver backup", ErrBadBackup)
	ErrVersion   = fmt.Errorf("%w: written by a later rlserver", ErrBadBackup)
	ErrDamaged   = fmt.Errorf("%w: damaged", ErrBadBackup)
	ErrTruncated = fmt.Errorf("%w: truncated", ErrBadBackup)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header describes a backup.
type Header struct {
	Version   uint16
	CreatedMs int64
	Shards    int
	Source    string // the address it was taken from
	Release   string // the rlserver that wrote it
}

// Shard describes one shard's section.
type Shard struct {
	Shard       int
	Index, Term uint64
	TimeMs      int64 // the shard's clock at Index
	TakenMs     int64 // when the leader took it
	Size        int64 // bytes of the frame
}

// Writer writes a backup file.
type Writer struct {
	w      io.Writer
	file   hash.Hash32 // every byte so far
	shards int         // sections the header announced
	next   int         // the next section's shard
}

// NewWriter writes h's header to w and returns the writer of its sections.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	if h.Shards < 1 || h.Shards > maxShards || len(h.Source) > maxString || len(h.Release) > maxString {
		return nil, fmt.Errorf("backup: invalid header %+v", h)
	}
	bw := &Writer{w: w, file: crc32.New(castagnoli), shards: h.Shards}
	b := append([]byte(magic), 0, 0)
	binary.BigEndian.PutUint16(b[len(magic):], FormatVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(h.CreatedMs))
	b = binary.BigEndian.AppendUint32(b, uint32(h.Shards))
	b = appendString(b, h.Source)
	b = appendString(b, h.Release)
	return bw, bw.write(b)
}

func appendString(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...)
}

// write writes b, counting it in the file's checksum.
func (bw *Writer) write(b []byte) error {
	bw.file.Write(b)
	_, err := bw.w.Write(b)
	return err
}

// WriteShard writes the next shard's section: s, then s.Size bytes of frame
// from frame.
func (bw *Writer) WriteShard(s Shard, frame io.Reader) error {
	if s.Shard != bw.next || bw.next >= bw.shards {
		return fmt.Errorf("backup: shard %d out of order (next: %d of %d)", s.Shard, bw.next, bw.shards)
	}
	section := crc32.New(castagnoli)
	head := []byte(sectionMagic)
	head = binary.BigEndian.AppendUint32(head, uint32(s.Shard))
	head = binary.BigEndian.AppendUint64(head, s.Index)
	head = binary.BigEndian.AppendUint64(head, s.Term)
	head = binary.BigEndian.AppendUint64(head, uint64(s.TimeMs))
	head = binary.BigEndian.AppendUint64(head, uint64(s.TakenMs))
	head = binary.BigEndian.AppendUint64(head, uint64(s.Size))
	section.Write(head)
	if err := bw.write(head); err != nil {
		return err
	}
	n, err := io.Copy(io.MultiWriter(bw.w, bw.file, section), io.LimitReader(frame, s.Size))
	if err != nil {
		return err
	}
	if n != s.Size {
		return fmt.Errorf("backup: shard %d: the frame ended after %d of %d bytes", s.Shard, n, s.Size)
	}
	bw.next++
	return bw.write(binary.BigEndian.AppendUint32(nil, section.Sum32()))
}

// Close writes the trailer, once every shard's section is written. It does
// not close the underlying writer.
func (bw *Writer) Close() error {
	if bw.next != bw.shards {
		return fmt.Errorf("backup: %d of %d shards written", bw.next, bw.shards)
	}
	sum := bw.file.Sum32()
	b := binary.BigEndian.AppendUint32([]byte(trailerMagic), uint32(bw.shards))
	_, err := bw.w.Write(binary.BigEndian.AppendUint32(b, sum))
	return err
}

// Reader reads a backup file, checking it as it goes.
type Reader struct {
	r      *bufio.Reader
	file   hash.Hash32 // every byte up to the trailer
	header Header
	next   int        // the next section's shard
	frame  *frameRead // the section being read, until checked
}

// NewReader reads and checks the header of the backup r holds.
func NewReader(r io.Reader) (*Reader, error) {
	br := &Reader{r: bufio.NewReaderSize(r, 256<<10), file: crc32.New(castagnoli)}
	head, err := br.read(len(magic) + 2)
	if err != nil {
		return nil, err
	}
	if string(head[:len(magic)]) != magic {
		return nil, ErrNotBackup
	}
	h := &br.header
	if h.Version = binary.BigEndian.Uint16(head[len(magic):]); h.Version < 1 || h.Version > FormatVersion {
		return nil, fmt.Errorf("%w: format %d, this rlserver reads 1 to %d", ErrVersion, h.Version, FormatVersion)
	}
	fixed, err := br.read(12)
	if err != nil {
		return nil, err
	}
	h.CreatedMs = int64(binary.BigEndian.Uint64(fixed))
	if n := binary.BigEndian.Uint32(fixed[8:]); n < 1 || n > maxShards {
		return nil, fmt.Errorf("%w: %d shards", ErrDamaged, n)
	} else {
		h.Shards = int(n)
	}
	if h.Source, err = br.string(); err != nil {
		return nil, err
	}
	if h.Release, err = br.string(); err != nil {
		return nil, err
	}
	return br, nil
}

// Header is the backup's header.
func (br *Reader) Header() Header { return br.header }

// read reads n bytes, counting them in the file's checksum; a short read is
// ErrTruncated.
func (br *Reader) read(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(br.r, b); err != nil {
		return nil, truncated(err)
	}
	br.file.Write(b)
	return b, nil
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the file ends early", ErrTruncated)
	}
	return err
}

func (br *Reader) string() (string, error) {
	n, err := br.read(2)
	if err != nil {
		return "", err
	}
	if l := binary.BigEndian.Uint16(n); l > maxString {
		return "", fmt.Errorf("%w: a string of %d bytes", ErrDamaged, l)
	}
	s, err := br.read(int(binary.BigEndian.Uint16(n)))
	return string(s), err
}

// Next returns the next shard's section and a reader of its frame, which
// fails at its end if the section's checksum does not match; io.EOF after
// the last shard, once the trailer has checked the whole file. Next reads
// past what the caller left of the previous frame, checking it.
func (br *Reader) Next() (Shard, io.Reader, error) {
	if br.frame != nil {
		if _, err := io.Copy(io.Discard, br.frame); err != nil {
			return Shard{}, nil, err
		}
		br.frame = nil
	}
	if br.next == br.header.Shards {
		return Shard{}, nil, br.trailer()
	}
	head, err := br.read(len(sectionMagic) + 44)
	if err != nil {
		return Shard{}, nil, fmt.Errorf("shard %d: %w", br.next, err)
	}
	if string(head[:4]) != sectionMagic {
		return Shard{}, nil, fmt.Errorf("%w: no section for shard %d", ErrDamaged, br.next)
	}
	be := binary.BigEndian
	s := Shard{
		Shard: int(be.Uint32(head[4:])), Index: be.Uint64(head[8:]), Term: be.Uint64(head[16:]),
		TimeMs: int64(be.Uint64(head[24:])), TakenMs: int64(be.Uint64(head[32:])),
	}
	size := be.Uint64(head[40:])
	if s.Shard != br.next {
		return Shard{}, nil, fmt.Errorf("%w: shard %d where shard %d belongs", ErrDamaged, s.Shard, br.next)
	}
	if size > maxFrame {
		return Shard{}, nil, fmt.Errorf("%w: shard %d of %d bytes", ErrDamaged, s.Shard, size)
	}
	s.Size = int64(size)
	section := crc32.New(castagnoli)
	section.Write(head)
	br.frame = &frameRead{br: br, shard: s.Shard, left: s.Size, section: section}
	br.next++
	return s, br.frame, nil
}

// trailer checks the trailer: the shard count, the file's checksum, and
// nothing after it.
func (br *Reader) trailer() error {
	sum := br.file.Sum32()
	t := make([]byte, 12)
	if _, err := io.ReadFull(br.r, t); err != nil {
		return fmt.Errorf("trailer: %w", truncated(err))
	}
	switch {
	case string(t[:4]) != trailerMagic:
		return fmt.Errorf("%w: no trailer after the last shard", ErrDamaged)
	case int(binary.BigEndian.Uint32(t[4:])) != br.header.Shards:
		return fmt.Errorf("%w: the trailer counts %d shards, the header %d", ErrDamaged, binary.BigEndian.Uint32(t[4:]), br.header.Shards)
	case binary.BigEndian.Uint32(t[8:]) != sum:
		return fmt.Errorf("%w: the file's checksum does not match", ErrDamaged)
	}
	if _, err := br.r.ReadByte(); err == nil {
		return fmt.Errorf("%w: bytes after the trailer", ErrDamaged)
	}
	return io.EOF
}

// frameRead reads one section's frame and checks its checksum at its end.
type frameRead struct {
	br      *Reader
	shard   int
	left    int64
	section hash.Hash32
	err     error
}

func (f *frameRead) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.left == 0 {
		f.err = f.check()
		if f.err == nil {
			f.err = io.EOF
		}
		return 0, f.err
	}
	n, err := f.br.r.Read(p[:min(int64(len(p)), f.left)])
	f.left -= int64(n)
	f.section.Write(p[:n])
	f.br.file.Write(p[:n])
	if err != nil && f.left > 0 {
		f.err = fmt.Errorf("shard %d: %w", f.shard, truncated(err))
		return n, f.err
	}
	return n, nil
}

// check reads the section's checksum and compares it.
func (f *frameRead) check() error {
	sum, err := f.br.read(4)
	if err != nil {
		return fmt.Errorf("shard %d: %w", f.shard, err)
	}
	if binary.BigEndian.Uint32(sum) != f.section.Sum32() {
		return fmt.Errorf("%w: shard %d's checksum does not match", ErrDamaged, f.shard)
	}
	return nil
}

// Verify reads a whole backup and checks every checksum, without keeping
// it: its header and its shards' sections.
func Verify(r io.Reader) (Header, []Shard, error) {
	br, err := NewReader(r)
	if err != nil {
		return Header{}, nil, err
	}
	var shards []Shard
	for {
		s, frame, err := br.Next()
		if errors.Is(err, io.EOF) {
			return br.Header(), shards, nil
		}
		if err != nil {
			return br.Header(), shards, err
		}
		if _, err := io.Copy(io.Discard, frame); err != nil {
			return br.Header(), shards, err
		}
		shards = append(shards, s)
	}
}
