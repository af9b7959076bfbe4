package generator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
type packStorage struct {
	*memory.Storage
	mu      sync.Mutex
	dropped map[plumbing.Hash]int64 // objects not kept: their sizes
	kept    int64
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
		err := s.readPack(pr)
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

// readPack reads a packfile stream object by object.
func (s *packStorage) readPack(r io.Reader) error {
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
	return s.resolve(deltas, at)
}

// resolve applies the deltas whose bases are kept, until none is left that
// can be; a delta whose result is over its bound is not kept either.
func (s *packStorage) resolve(deltas []pendingDelta, at map[int64]plumbing.Hash) error {
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
				return err
			}
			out, err := packfile.PatchDelta(src, d.data)
			if err != nil {
				return fmt.Errorf("packfile delta at %d: %w", d.offset, err)
			}
			o := &plumbing.MemoryObject{}
			o.SetType(bo.Type())
			o.SetSize(int64(len(out)))
			if _, err := o.Write(out); err != nil {
				return err
			}
			h, err := s.SetEncodedObject(o)
			if err != nil {
				return err
			}
			s.kept += int64(len(out))
			at[d.offset] = h
		}
		deltas = rest
	}
	return nil
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
