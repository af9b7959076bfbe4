package generator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/spokeforge/spokeforge/internal/repo"
)

// maxKeptBytes bounds the objects a fetch keeps in memory: the trees
// (maxTreesBytes) and records (repo.MaxRecordsBytes) a walk may read, and
// the small blobs beside them that a pack cannot tell apart from records.
const maxKeptBytes = maxTreesBytes + repo.MaxRecordsBytes

// packStorage is the in-memory storage a remote commit is fetched into. It
// takes the packfile as a stream (storer.PackfileWriter) instead of letting
// go-git parse it, which inflates every object of the commit into memory,
// twice: each object is hashed as it streams by, and only those a walk may
// read are kept (commits and tags up to maxCommitBytes, trees up to
// maxTreeBytes, blobs up to repo.MaxRecordBytes, maxKeptBytes in all).
// Of the others only the size is kept, so a huge file anywhere in the
// commit costs the transfer, never its size in memory.
//
// The pack itself is spooled to a temporary file as it streams by (its
// first maxSpoolBytes): a kept object stored as a delta against one that
// is not (a record against a huge blob) is rebuilt from it (packReader)
// with only the ranges of the base it copies read.
type packStorage struct {
	*memory.Storage
	mu      sync.Mutex
	dropped map[plumbing.Hash]int64 // objects not kept: their sizes
	kept    int64
}

// maxSpoolBytes bounds the temporary file a fetched pack is spooled to
// (the generator's /tmp is a 64 MiB emptyDir, manifests/generator): a
// delta against an object past it cannot be rebuilt.
const maxSpoolBytes = 32 << 20

// spool is the temporary file a fetched pack streams into, up to maxSpoolBytes.
type spool struct {
	f *os.File
	n int64
}

// newSpool creates the file, unlinked at once; nil when there is no
// writable temporary directory (then no delta against an object not kept
// is rebuilt).
func newSpool() *spool {
	f, err := os.CreateTemp("", "spokeforge-pack-")
	if err != nil {
		return nil
	}
	_ = os.Remove(f.Name())
	return &spool{f: f}
}

// Write keeps what fits; the pack stream goes on either way.
func (s *spool) Write(b []byte) (int, error) {
	if s != nil && s.f != nil && s.n < maxSpoolBytes {
		k, err := s.f.Write(b[:min(int64(len(b)), maxSpoolBytes-s.n)])
		s.n += int64(k)
		if err != nil { // a full disk: stop spooling, not the fetch
			s.n = maxSpoolBytes
		}
	}
	return len(b), nil
}

func (s *spool) close() {
	if s != nil && s.f != nil {
		_ = s.f.Close()
	}
}

func newPackStorage() *packStorage {
	return &packStorage{Storage: memory.NewStorage(), dropped: map[plumbing.Hash]int64{}}
}

// errNotKept: the object was in the pack but over the bounds.
var errNotKept = errors.New("not kept in memory: over the generator's bounds")

// EncodedObjectSize implements storer.EncodedObjectStorer.
func (s *packStorage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	s.mu.Lock()
	n, ok := s.dropped[h]
	s.mu.Unlock()
	if ok {
		return n, nil
	}
	return s.Storage.EncodedObjectSize(h)
}

// EncodedObject implements storer.EncodedObjectStorer.
func (s *packStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	s.mu.Lock()
	n, ok := s.dropped[h]
	s.mu.Unlock()
	if ok {
		return nil, fmt.Errorf("object %s of %d bytes: %w", h, n, errNotKept)
	}
	return s.Storage.EncodedObject(t, h)
}

// keepBound is the largest object of type t a walk may read.
func keepBound(t plumbing.ObjectType) int64 {
	switch t {
	case plumbing.TreeObject:
		return maxTreeBytes
	case plumbing.BlobObject:
		return repo.MaxRecordBytes
	}
	return maxCommitBytes
}

// PackfileWriter implements storer.PackfileWriter: the fetched pack is
// streamed through readPack.
func (s *packStorage) PackfileWriter() (io.WriteCloser, error) {
	pr, pw := io.Pipe()
	w := &packWriter{pw: pw, done: make(chan error, 1)}
	go func() {
		sp := newSpool()
		defer sp.close()
		err := s.readPack(io.TeeReader(pr, sp), sp)
		if err == nil {
			// The trailing checksum; objects are checked by their hashes.
			_, err = io.Copy(io.Discard, pr)
		}
		_ = pr.CloseWithError(err)
		w.done <- err
	}()
	return w, nil
}

type packWriter struct {
	pw   *io.PipeWriter
	done chan error
}

func (w *packWriter) Write(b []byte) (int, error) { return w.pw.Write(b) }
func (w *packWriter) Close() error {
	_ = w.pw.Close()
	return <-w.done
}

// pendingDelta is a delta object waiting for its base.
type pendingDelta struct {
	offset  int64
	baseOff int64         // an offset delta's base
	baseRef plumbing.Hash // a reference delta's base
	data    []byte
}

// readPack reads a packfile stream object by object; sp holds what of it
// was spooled (nil: nothing).
func (s *packStorage) readPack(r io.Reader, sp *spool) error {
	sc := packfile.NewScanner(r)
	_, count, err := sc.Header()
	if err != nil {
		return err
	}
	at := map[int64]plumbing.Hash{} // offset -> hash of the objects hashed
	var deltas []pendingDelta
	for i := uint32(0); i < count; i++ {
		oh, err := sc.NextObjectHeader()
		if err != nil {
			return err
		}
		switch oh.Type {
		case plumbing.OFSDeltaObject, plumbing.REFDeltaObject:
			// A delta's data is about as long as what it adds; one over
			// the largest object kept is not kept (its hash stays unknown).
			if oh.Length > maxTreeBytes+1024 || s.kept+oh.Length > maxKeptBytes {
				if _, _, err := sc.NextObject(io.Discard); err != nil {
					return err
				}
				continue
			}
			var buf bytes.Buffer
			if _, _, err := sc.NextObject(&buf); err != nil {
				return err
			}
			s.kept += oh.Length
			deltas = append(deltas, pendingDelta{offset: oh.Offset, baseOff: oh.OffsetReference, baseRef: oh.Reference, data: buf.Bytes()})
		case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
			if oh.Length <= keepBound(oh.Type) && s.kept+oh.Length <= maxKeptBytes {
				o := &plumbing.MemoryObject{}
				o.SetType(oh.Type)
				o.SetSize(oh.Length)
				if _, _, err := sc.NextObject(o); err != nil {
					return err
				}
				h, err := s.SetEncodedObject(o)
				if err != nil {
					return err
				}
				s.kept += oh.Length
				at[oh.Offset] = h
				continue
			}
			hasher := plumbing.NewHasher(oh.Type, oh.Length)
			if _, _, err := sc.NextObject(hasher); err != nil {
				return err
			}
			h := hasher.Sum()
			s.mu.Lock()
			s.dropped[h] = oh.Length
			s.mu.Unlock()
			at[oh.Offset] = h
		default:
			return fmt.Errorf("packfile object of type %s", oh.Type)
		}
	}
	return s.resolve(deltas, at, sp)
}

// resolve applies the deltas whose bases are kept, until none is left that
// can be; a delta whose result is over its bound is not kept either. The
// rest are rebuilt from the spooled pack.
func (s *packStorage) resolve(deltas []pendingDelta, at map[int64]plumbing.Hash, sp *spool) error {
	deltas, err := s.resolveKept(deltas, at)
	if err != nil || len(deltas) == 0 || sp == nil || sp.f == nil {
		return err
	}
	offsets := make(map[plumbing.Hash]int64, len(at))
	for off, h := range at {
		offsets[h] = off
	}
	p := &packReader{ra: sp.f, size: sp.n, offsetOf: func(h plumbing.Hash) (int64, bool) {
		off, ok := offsets[h]
		return off, ok
	}}
	for _, d := range deltas {
		base, ok := d.baseOff, d.baseRef.IsZero()
		if !ok {
			base, ok = offsets[d.baseRef]
		}
		target := deltaTargetSize(d.data)
		if !ok || target < 0 || target > maxTreeBytes || s.kept+target > maxKeptBytes {
			continue
		}
		out, t, err := p.applyFrom(d.data, base)
		if err != nil || target > keepBound(t) {
			// Past the spool or a bound: its hash stays unknown and a
			// walk that needs it refuses the commit.
			continue
		}
		h, err := s.keep(t, out)
		if err != nil {
			return err
		}
		at[d.offset], offsets[h] = h, d.offset
	}
	return nil
}

// keep stores a rebuilt object.
func (s *packStorage) keep(t plumbing.ObjectType, b []byte) (plumbing.Hash, error) {
	o := &plumbing.MemoryObject{}
	o.SetType(t)
	o.SetSize(int64(len(b)))
	if _, err := o.Write(b); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := s.SetEncodedObject(o)
	if err == nil {
		s.kept += int64(len(b))
	}
	return h, err
}

// resolveKept applies the deltas whose bases are kept in memory, until none
// is left that can be; it returns those left.
func (s *packStorage) resolveKept(deltas []pendingDelta, at map[int64]plumbing.Hash) ([]pendingDelta, error) {
	for progress := true; progress && len(deltas) > 0; {
		progress = false
		rest := deltas[:0]
		for _, d := range deltas {
			base := d.baseRef
			if base.IsZero() {
				h, ok := at[d.baseOff]
				if !ok {
					rest = append(rest, d)
					continue
				}
				base = h
			}
			bo, err := s.Storage.EncodedObject(plumbing.AnyObject, base)
			if err != nil {
				rest = append(rest, d) // not here yet, or not kept
				continue
			}
			progress = true
			if target := deltaTargetSize(d.data); target < 0 || target > keepBound(bo.Type()) || s.kept+target > maxKeptBytes {
				continue
			}
			src, err := objectBytes(bo)
			if err != nil {
				return nil, err
			}
			out, err := packfile.PatchDelta(src, d.data)
			if err != nil {
				return nil, fmt.Errorf("packfile delta at %d: %w", d.offset, err)
			}
			h, err := s.keep(bo.Type(), out)
			if err != nil {
				return nil, err
			}
			at[d.offset] = h
		}
		deltas = rest
	}
	return deltas, nil
}

func objectBytes(o plumbing.EncodedObject) ([]byte, error) {
	r, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// deltaTargetSize reads the size of the object a delta makes (the second
// of the two sizes it starts with); -1 when malformed.
func deltaTargetSize(delta []byte) int64 {
	rest := delta
	var size int64
	for n := 0; n < 2; n++ {
		size = 0
		for shift := uint(0); ; shift += 7 {
			if len(rest) == 0 || shift > 56 {
				return -1
			}
			b := rest[0]
			rest = rest[1:]
			size |= int64(b&0x7f) << shift
			if b&0x80 == 0 {
				break
			}
		}
	}
	return size
}
