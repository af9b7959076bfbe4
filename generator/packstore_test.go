package generator

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/spokeforge/spokeforge/internal/repo"
)

// TestPackStorageDeltas: a fetched pack's deltas are resolved when their
// result is within the bounds (offset and reference deltas), and an object
// over them is not kept: by its size when it is whole, not at all when it
// is a delta (its hash is unknown without making it).
func TestPackStorageDeltas(t *testing.T) {
	small := strings.Repeat("apiVersion: spokeforge.io/v1alpha1\n", 300)
	big := strings.Repeat("x", repo.MaxRecordBytes+4096)
	contents := []string{small, small + "a change\n", small + "another change\n", big, big + "more\n"}
	src := memory.NewStorage()
	var hashes []plumbing.Hash
	for _, c := range contents {
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.BlobObject)
		if _, err := o.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
		h, err := src.SetEncodedObject(o)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h)
	}
	for _, refDeltas := range []bool{false, true} {
		var pack bytes.Buffer
		if _, err := packfile.NewEncoder(&pack, src, refDeltas).Encode(hashes, 10); err != nil {
			t.Fatal(err)
		}
		if d := countDeltas(t, pack.Bytes()); d < 2 {
			t.Fatalf("ref deltas %v: the pack holds %d deltas; the test needs some", refDeltas, d)
		}
		s := newPackStorage()
		w, err := s.PackfileWriter()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(pack.Bytes()); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		for i, h := range hashes {
			n, err := s.EncodedObjectSize(h)
			if err != nil && !(i >= 3 && errors.Is(err, plumbing.ErrObjectNotFound)) { // a big delta's hash stays unknown
				t.Fatalf("ref deltas %v: object %d: %v", refDeltas, i, err)
			}
			if err == nil && n != int64(len(contents[i])) {
				t.Fatalf("ref deltas %v: object %d is %d bytes, want %d", refDeltas, i, n, len(contents[i]))
			}
			o, err := s.EncodedObject(plumbing.BlobObject, h)
			switch {
			case i < 3 && err != nil:
				t.Fatalf("ref deltas %v: object %d not kept: %v", refDeltas, i, err)
			case i < 3:
				b, _ := objectBytes(o)
				if string(b) != contents[i] {
					t.Fatalf("ref deltas %v: object %d differs", refDeltas, i)
				}
			case err == nil:
				t.Fatalf("ref deltas %v: object %d of %d bytes was kept", refDeltas, i, len(contents[i]))
			}
		}
	}
}

func countDeltas(t *testing.T, pack []byte) int {
	sc := packfile.NewScanner(bytes.NewReader(pack))
	_, count, err := sc.Header()
	if err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for i := uint32(0); i < count; i++ {
		oh, err := sc.NextObjectHeader()
		if err != nil {
			t.Fatal(err)
		}
		if oh.Type.IsDelta() {
			deltas++
		}
	}
	return deltas
}
