package generator

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/spokeforge/spokeforge/internal/repo"
)

// packObject is one object of a hand-built pack: whole, or a delta
// against an earlier object (base) of the pack, by offset or by hash.
type packObject struct {
	typ     plumbing.ObjectType
	content []byte // the object's bytes (a delta's result)
	base    int    // a delta's base; -1: whole
	byRef   bool
	delta   []byte // a delta's instructions; nil: made from the base's content
}

func blobHash(b []byte) plumbing.Hash { return plumbing.ComputeHash(plumbing.BlobObject, b) }

// buildPack encodes objs as a pack, each delta made against its base's
// content, whatever git's own heuristics would choose.
func buildPack(t testing.TB, objs []packObject) []byte {
	t.Helper()
	var pack bytes.Buffer
	pack.WriteString("PACK")
	_ = binary.Write(&pack, binary.BigEndian, uint32(2))
	_ = binary.Write(&pack, binary.BigEndian, uint32(len(objs)))
	offsets := make([]int64, len(objs))
	for i, o := range objs {
		offsets[i] = int64(pack.Len())
		data, typ := o.content, o.typ
		if o.base >= 0 {
			if data = o.delta; data == nil {
				data = packfile.DiffDelta(objs[o.base].content, o.content)
			}
			typ = plumbing.OFSDeltaObject
			if o.byRef {
				typ = plumbing.REFDeltaObject
			}
		}
		n := len(data)
		b := byte(typ)<<4 | byte(n&0x0f)
		for n >>= 4; n > 0; n >>= 7 {
			pack.WriteByte(b | 0x80)
			b = byte(n & 0x7f)
		}
		pack.WriteByte(b)
		switch typ {
		case plumbing.OFSDeltaObject:
			d := offsets[i] - offsets[o.base]
			enc := []byte{byte(d & 0x7f)}
			for d >>= 7; d > 0; d >>= 7 {
				d--
				enc = append([]byte{byte(0x80 | d&0x7f)}, enc...)
			}
			pack.Write(enc)
		case plumbing.REFDeltaObject:
			h := plumbing.ComputeHash(objs[o.base].typ, objs[o.base].content)
			pack.Write(h[:])
		}
		z := zlib.NewWriter(&pack)
		if _, err := z.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
	}
	sum := sha1.Sum(pack.Bytes())
	pack.Write(sum[:])
	return pack.Bytes()
}

// patterned is n bytes of a pattern that git compresses well, with mark
// written at at.
func patterned(n, at int, mark string) []byte {
	b := []byte(strings.Repeat("spokeforge-", n/11+1)[:n])
	copy(b[at:], mark)
	return b
}

// deltaCases are packs in which a record (1 KiB to 1 MiB) is a delta
// against a base no generator keeps: a huge blob, a huge delta of it, a
// chain of small deltas ending on a huge blob; by offset and by hash; the
// record copying from the middle, the end, and overlapping ranges.
func deltaCases() []struct {
	name string
	objs []packObject
} {
	const huge = 24 << 20
	rec := []byte(strings.Repeat("apiVersion: spokeforge.io/v1alpha1\nkind: Organization\n", 40))
	big := patterned(huge, huge/2, string(rec))
	big2 := append(append([]byte{}, big[:huge/3]...), patterned(huge-huge/3, huge/4, "a change")...)
	big2 = append(big2[:huge/2], append(append([]byte{}, rec...), big2[huge/2+len(rec):]...)...)
	recEnd := append(append([]byte{}, big[huge-300:]...), rec...)
	twice := append(append([]byte{}, rec...), rec...)
	mid := append(append([]byte{}, rec[:500]...), rec...)
	blob := plumbing.BlobObject
	return []struct {
		name string
		objs []packObject
	}{
		{"offset delta against a huge blob", []packObject{{blob, big, -1, false, nil}, {blob, rec, 0, false, nil}}},
		{"reference delta against a huge blob", []packObject{{blob, big, -1, false, nil}, {blob, rec, 0, true, nil}}},
		{"copies from the end and inserts", []packObject{{blob, big, -1, false, nil}, {blob, recEnd, 0, false, nil}}},
		{"overlapping copies", []packObject{{blob, big, -1, false, nil}, {blob, twice, 0, false, nil}, {blob, mid, 0, false, nil}}},
		{"through a huge delta", []packObject{{blob, big, -1, false, nil}, {blob, big2, 0, false, nil}, {blob, rec, 1, false, nil}}},
		{"through a huge reference delta", []packObject{{blob, big, -1, false, nil}, {blob, big2, 0, true, nil}, {blob, rec, 1, false, nil}}},
		{"chain of small deltas", []packObject{{blob, big, -1, false, nil}, {blob, twice, 0, false, nil}, {blob, mid, 1, false, nil}, {blob, rec, 2, false, nil}}},
	}
}

// TestPackStorageRebuildsDeltaAgainstUnkeptBase: a fetched record stored
// as a delta against an object the pack storage does not keep (over 1 MiB)
// is rebuilt from the spooled pack, byte for byte, without the base ever
// held in memory.
func TestPackStorageRebuildsDeltaAgainstUnkeptBase(t *testing.T) {
	for _, tc := range deltaCases() {
		t.Run(tc.name, func(t *testing.T) {
			pack := buildPack(t, tc.objs)
			s := newPackStorage()
			n := allocated(func() {
				w, err := s.PackfileWriter()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.Write(pack); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			})
			for i, o := range tc.objs {
				if len(o.content) > repo.MaxRecordBytes {
					continue
				}
				got, err := s.EncodedObject(plumbing.BlobObject, blobHash(o.content))
				if err != nil {
					t.Fatalf("object %d: %v", i, err)
				}
				if b, _ := objectBytes(got); !bytes.Equal(b, o.content) {
					t.Fatalf("object %d differs", i)
				}
			}
			t.Logf("the pack read allocated %d KiB beside a %d MiB base", n>>10, len(tc.objs[0].content)>>20)
			if n > uint64(len(tc.objs[0].content))/4 {
				t.Fatalf("the pack read allocated %d bytes: the base was held", n)
			}
		})
	}
}

// TestPackReaderBounds: a delta that copies past its base, a chain over
// maxDeltaChain, a base missing from the pack, a spool cut before the base
// are errors, never a wrong object.
func TestPackReaderBounds(t *testing.T) {
	rec := []byte(strings.Repeat("kind: Organization\n", 100))
	base := patterned(4096, 100, string(rec))
	pack := buildPack(t, []packObject{{plumbing.BlobObject, base, -1, false, nil}, {plumbing.BlobObject, rec, 0, false, nil}})
	none := func(plumbing.Hash) (int64, bool) { return 0, false }
	at := objectOffsets(t, pack)
	p := &packReader{ra: bytes.NewReader(pack), size: int64(len(pack)), offsetOf: none}
	if b, _, err := p.read(at[1], int64(len(rec))); err != nil || !bytes.Equal(b, rec) {
		t.Fatalf("read: %v", err)
	}
	p = &packReader{ra: bytes.NewReader(pack), size: at[1] / 2, offsetOf: none}
	if _, _, err := p.read(at[1], int64(len(rec))); err == nil {
		t.Fatal("read past the spool")
	}
	// Deltas that copy past the end of their base: as the delta says
	// (10 bytes), as the base is (4096 bytes, the delta says 10,000).
	for _, bad := range [][]byte{{0x0a, 0x05, 0x91, 0x08, 0x05}, {0x90, 0x4e, 0x05, 0x93, 0x88, 0x13, 0x05}} {
		p = &packReader{ra: bytes.NewReader(pack), size: int64(len(pack)), offsetOf: none}
		if _, _, err := p.applyFrom(bad, at[0]); err == nil || !strings.Contains(err.Error(), "past the end") {
			t.Fatalf("a delta past its base: %v", err)
		}
	}
	// A chain longer than maxDeltaChain: a delta copying its 5-byte base
	// whole, which is itself by hash.
	loop := buildPack(t, []packObject{{plumbing.BlobObject, base, -1, false, nil},
		{plumbing.BlobObject, base[:5], 0, true, []byte{0x05, 0x05, 0x90, 0x05}}})
	lat := objectOffsets(t, loop)
	p = &packReader{ra: bytes.NewReader(loop), size: int64(len(loop)), offsetOf: func(plumbing.Hash) (int64, bool) { return lat[1], true }}
	if _, _, err := p.read(lat[1], 5); err == nil || !strings.Contains(err.Error(), "chain") {
		t.Fatalf("a delta loop: %v", err)
	}
	p = &packReader{ra: bytes.NewReader(loop), size: int64(len(loop)), offsetOf: none}
	if _, _, err := p.read(lat[1], 5); err == nil || !strings.Contains(err.Error(), "not in the pack") {
		t.Fatalf("a missing base: %v", err)
	}
}

func objectOffsets(t *testing.T, pack []byte) []int64 {
	sc := packfile.NewScanner(bytes.NewReader(pack))
	_, count, err := sc.Header()
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for i := uint32(0); i < count; i++ {
		oh, err := sc.NextObjectHeader()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, oh.Offset)
	}
	return out
}

// commitRecordAsDelta commits rec as the org record orgs/acme.yaml (also in
// the work tree, which validate reads) and a huge blob docs/huge.bin
// holding rec, and stores them in a pack, the record as a delta against
// the blob: git's own delta search never makes a delta against a base 32
// times larger, but a pack pushed to the git server is served as it is.
func commitRecordAsDelta(t *testing.T, g *gitRepo, rec []byte, huge int) string {
	t.Helper()
	big := patterned(huge, huge/2, string(rec))
	return commitPacked(t, g, map[string][]byte{"orgs/acme.yaml": rec, "docs/huge.bin": big},
		[]packObject{{plumbing.BlobObject, big, -1, false, nil}, {plumbing.BlobObject, rec, 0, false, nil}})
}

// commitPacked stores objs in a pack of g and commits files (a path and
// its content, one of objs) on HEAD; the records among them are written to
// the work tree too.
func commitPacked(t *testing.T, g *gitRepo, files map[string][]byte, objs []packObject) string {
	t.Helper()
	st := g.r.Storer.(*filesystem.Storage)
	w, err := st.PackfileWriter()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(buildPack(t, objs)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	head, err := g.r.Head()
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.r.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	root := c.TreeHash
	for p, b := range files {
		root = putEntry(t, st, root, strings.Split(p, "/"), blobHash(b))
		if !strings.HasPrefix(p, "docs/") {
			if err := os.WriteFile(filepath.Join(g.dir, filepath.FromSlash(p)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return commitTree(t, st, g, root, head.Hash())
}

func commitTree(t *testing.T, st storer.Storer, g *gitRepo, root, parent plumbing.Hash) string {
	t.Helper()
	sig := object.Signature{Name: "t", Email: "t@example.invalid", When: time.Unix(1700000000, 0)}
	o := st.NewEncodedObject()
	if err := (&object.Commit{Author: sig, Committer: sig, Message: "a record as a delta", TreeHash: root, ParentHashes: []plumbing.Hash{parent}}).Encode(o); err != nil {
		t.Fatal(err)
	}
	h, err := st.SetEncodedObject(o)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := g.r.Head()
	if err := st.SetReference(plumbing.NewHashReference(head.Name(), h)); err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// TestGitSourceLoadsRecordDeltaAgainstHugeBlob: a record stored as a delta
// against a 24 MiB blob loads, in place and fetched, as the checkout
// validate reads holds it, with a small fraction of the blob allocated.
func TestGitSourceLoadsRecordDeltaAgainstHugeBlob(t *testing.T) {
	const huge = 24 << 20
	for _, fetch := range []bool{false, true} {
		t.Run(fmt.Sprintf("fetched=%v", fetch), func(t *testing.T) {
			g := newGitRepo(t)
			orig, err := os.ReadFile(filepath.Join(g.dir, "orgs", "acme.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			rec := append(orig, []byte("# stored as a delta against docs/huge.bin\n")...)
			head := commitRecordAsDelta(t, g, rec, huge)
			if countPackDeltas(t, g.dir) == 0 {
				t.Fatal("the repo's pack holds no delta")
			}
			src, err := NewGitSource(GitConfig{Repo: g.repoArg(fetch), App: testSource})
			if err != nil {
				t.Fatal(err)
			}
			var st SourceStatus
			n := allocated(func() { st, err = src.Refresh(context.Background()) })
			if err != nil || st.Commit != head || st.HeadError != "" {
				t.Fatalf("refresh: %+v %v", st, err)
			}
			files, refused := repo.ReadFiles(g.dir)
			if len(refused) > 0 || !bytes.Equal(files["orgs/acme.yaml"], rec) {
				t.Fatalf("the checkout: %v", refused)
			}
			if _, o, _ := mustSnapshotOf(t, src).Counts(); o != 2 {
				t.Fatalf("%d orgs", o)
			}
			t.Logf("refresh allocated %d KiB beside a %d MiB base", n>>10, huge>>20)
			if n > huge/4 {
				t.Fatalf("the refresh allocated %d bytes: the base was held", n)
			}
		})
	}
}

// TestPackStorageBaseBeyondSpool: a delta whose base lies past the spooled
// first maxSpoolBytes of a fetched pack (an incompressible blob before it)
// is not rebuilt: its hash stays unknown, so a walk that needs it refuses
// the commit naming the record; a delta on a base inside the spool still is.
func TestPackStorageBaseBeyondSpool(t *testing.T) {
	rnd := make([]byte, maxSpoolBytes+(4<<20))
	rand.New(rand.NewSource(1)).Read(rnd)
	near := patterned(2<<20, 1<<20, "near")
	// Copy 4 KiB from offset (past / inside) each base.
	copyOp := func(from, n int) []byte {
		return []byte{0x80 | 0x0f | 0x30, byte(from), byte(from >> 8), byte(from >> 16), byte(from >> 24), byte(n), byte(n >> 8)}
	}
	header := func(base, n int) []byte {
		var b []byte
		for _, v := range []int{base, n} {
			for ; v >= 0x80; v >>= 7 {
				b = append(b, byte(v)|0x80)
			}
			b = append(b, byte(v))
		}
		return b
	}
	const n = 4096
	far := len(rnd) - 2*n
	farRec, nearRec := rnd[far:far+n], near[1<<20:1<<20+n]
	objs := []packObject{
		{plumbing.BlobObject, near, -1, false, nil},
		{plumbing.BlobObject, rnd, -1, false, nil},
		{plumbing.BlobObject, farRec, 1, false, append(header(len(rnd), n), copyOp(far, n)...)},
		{plumbing.BlobObject, nearRec, 0, false, append(header(len(near), n), copyOp(1<<20, n)...)},
	}
	s := newPackStorage()
	w, err := s.PackfileWriter()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(buildPack(t, objs)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EncodedObject(plumbing.BlobObject, blobHash(farRec)); err == nil {
		t.Fatal("a delta on a base past the spool was rebuilt")
	}
	o, err := s.EncodedObject(plumbing.BlobObject, blobHash(nearRec))
	if err != nil {
		t.Fatalf("the delta on a base inside the spool: %v", err)
	}
	if b, _ := objectBytes(o); !bytes.Equal(b, nearRec) {
		t.Fatal("the delta inside the spool differs")
	}
}
