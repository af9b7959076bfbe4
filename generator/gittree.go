package generator

import (
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// Bounds of one commit's walk (docs/security.md). A git tree entry carries
// no size: every object's size is read from its header (objectSize) before
// the object is, and only the trees on the way to a record and the record
// blobs themselves are ever read.
const (
	// maxTreeBytes bounds one directory's git tree object (about 150,000
	// entries); its entries are also bounded by repo.MaxDirEntries.
	maxTreeBytes = 8 << 20
	// maxTreesBytes bounds all the tree objects one commit's walk reads.
	maxTreesBytes = 64 << 20
	// maxLinkBytes bounds a symlink's target (a blob), as PATH_MAX does.
	maxLinkBytes = 4096
)

// errWalkBound stops a walk once a bound was passed (a finding is recorded).
var errWalkBound = errors.New("walk bound passed")

// treeWalk reads the record files of one commit's tree as repo.ReadFiles
// reads a checkout: the same paths, the same refusals.
type treeWalk struct {
	s         storer.EncodedObjectStorer
	sizes     sizer
	treeBytes int64 // tree objects read
	recBytes  int64 // record blobs listed
	files     map[string]repo.Blob
	refused   record.Errors
	// trees: the directories read, by path ("." the root): each is read
	// once, also when symlinks lead through it.
	trees map[string]*object.Tree
}

// sizer tells an object's size without reading the object.
type sizer func(plumbing.Hash) (int64, error)

// walkCommit lists the record files of tree root, every blob by its hash
// and size only: nothing outside the record paths is read, and a record is
// read only when the loader asks (and has not seen its hash).
func walkCommit(s storer.EncodedObjectStorer, sizes sizer, root plumbing.Hash) (map[string]repo.Blob, record.Errors, error) {
	w := &treeWalk{s: s, sizes: sizes, files: map[string]repo.Blob{}, trees: map[string]*object.Tree{}}
	err := w.walk(root)
	if errors.Is(err, errWalkBound) {
		err = nil
	}
	if err != nil {
		return nil, nil, err
	}
	sort.SliceStable(w.refused, func(i, j int) bool { return w.refused[i].File < w.refused[j].File })
	return w.files, w.refused, nil
}

func (w *treeWalk) fail(file, format string, args ...any) {
	w.refused = append(w.refused, record.Error{File: file, Msg: fmt.Sprintf(format, args...)})
}

// missing makes an object the walk cannot find a finding naming file: a
// fetched pack's object over the bounds (a delta whose result was not
// kept) rejects the commit, as an oversized record does. Other storage
// errors are returned as they are.
func (w *treeWalk) missing(file string, err error) error {
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		w.fail(file, "is not in the fetched commit within the generator's bounds")
		return nil
	}
	return fmt.Errorf("%s: %w", file, err)
}

// tree reads the tree object h of directory dir once its size is within
// the bounds.
func (w *treeWalk) tree(dir string, h plumbing.Hash) (*object.Tree, error) {
	if t, ok := w.trees[dir]; ok {
		return t, nil
	}
	n, err := w.sizes(h)
	if err != nil {
		if err := w.missing(dir+"/", err); err != nil {
			return nil, err
		}
		return nil, errWalkBound
	}
	if n > maxTreeBytes {
		w.fail(dir+"/", "its git tree is %d bytes; at most %d are read", n, maxTreeBytes)
		return nil, errWalkBound
	}
	if w.treeBytes += n; w.treeBytes > maxTreesBytes {
		w.fail(dir+"/", "brings the git trees read past %d bytes", maxTreesBytes)
		return nil, errWalkBound
	}
	t, err := object.GetTree(w.s, h)
	if err != nil {
		return nil, fmt.Errorf("%s/: %w", dir, err)
	}
	if len(t.Entries) > repo.MaxDirEntries {
		w.fail(dir+"/", "has %d entries; at most %d are listed", len(t.Entries), repo.MaxDirEntries)
		return nil, errWalkBound
	}
	w.trees[dir] = t
	return t, nil
}

func entry(t *object.Tree, name string) (object.TreeEntry, bool) {
	for _, e := range t.Entries {
		if e.Name == name {
			return e, true
		}
	}
	return object.TreeEntry{}, false
}

func isFile(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Deprecated || m == filemode.Executable
}

const symlinkDir = "is a symlink; a record directory must be a directory of the repo"

// recordDir is the top directory name of the root tree when it is a real
// directory (repo.ReadFiles' listDir).
func (w *treeWalk) recordDir(root *object.Tree, name string) (*object.Tree, error) {
	e, ok := entry(root, name)
	switch {
	case !ok:
		return nil, nil
	case e.Mode == filemode.Symlink:
		w.fail(name+"/", symlinkDir)
		return nil, nil
	case e.Mode != filemode.Dir:
		w.fail(name, "must be a directory")
		return nil, nil
	}
	return w.tree(name, e.Hash)
}

// subDirs lists the directories of t (at dir); a symlink in place of one
// is a finding.
func (w *treeWalk) subDirs(dir string, t *object.Tree) []object.TreeEntry {
	var out []object.TreeEntry
	for _, e := range t.Entries {
		switch e.Mode {
		case filemode.Symlink:
			w.fail(dir+"/"+e.Name+"/", symlinkDir)
		case filemode.Dir:
			out = append(out, e)
		}
	}
	return out
}

func (w *treeWalk) walk(rootHash plumbing.Hash) error {
	root, err := w.tree(".", rootHash)
	if err != nil {
		return err
	}
	clusters, err := w.recordDir(root, "clusters")
	if err != nil {
		return err
	}
	if clusters != nil {
		for _, d := range w.subDirs("clusters", clusters) {
			dir := "clusters/" + d.Name
			t, err := w.tree(dir, d.Hash)
			if err != nil {
				return err
			}
			if e, ok := entry(t, repo.ClusterFile); ok {
				if err := w.record(dir, e); err != nil {
					return err
				}
			}
			if _, ok := entry(t, "cluster.yml"); ok {
				w.fail(dir+"/cluster.yml", "a cluster record is read from %s only: rename it", repo.ClusterFile)
			}
		}
	}
	orgs, err := w.recordDir(root, "orgs")
	if err != nil {
		return err
	}
	if orgs != nil {
		if err := w.records("orgs", orgs); err != nil {
			return err
		}
	}
	products, err := w.recordDir(root, "products")
	if err != nil || products == nil {
		return err
	}
	for _, d := range w.subDirs("products", products) {
		dir := "products/" + d.Name
		t, err := w.tree(dir, d.Hash)
		if err != nil {
			return err
		}
		if err := w.records(dir, t); err != nil {
			return err
		}
	}
	return nil
}

// records lists every *.yaml of directory t and refuses the names a reader
// would skip (repo.ReadFiles' records).
func (w *treeWalk) records(dir string, t *object.Tree) error {
	for _, e := range t.Entries {
		p := dir + "/" + e.Name
		switch ext := path.Ext(e.Name); {
		case ext == ".yml":
			w.fail(p, "records are read from .yaml files only: rename it to %s.yaml", strings.TrimSuffix(e.Name, ext))
		case ext != ".yaml":
		default:
			if err := w.record(dir, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// record lists record e of directory dir: a file, or a symlink resolved
// to a file inside dir (Argo CD's out-of-bounds rule). Its
// size comes from the blob's header; the blob is read when the loader asks.
func (w *treeWalk) record(dir string, e object.TreeEntry) error {
	name := dir + "/" + e.Name
	target := e
	switch {
	case isFile(e.Mode):
	case e.Mode == filemode.Symlink:
		var ok bool
		var err error
		if target, ok, err = w.follow(dir, name, e); err != nil || !ok {
			return err
		}
	default: // a directory or a submodule
		w.fail(name, "is a directory; a record must be a file")
		return nil
	}
	size, err := w.sizes(target.Hash)
	if err != nil {
		return w.missing(name, err)
	}
	if size > repo.MaxRecordBytes {
		w.fail(name, "is %d bytes; at most %d are read", size, repo.MaxRecordBytes)
		return nil
	}
	if w.recBytes += size; w.recBytes > repo.MaxRecordsBytes {
		w.fail(name, "brings the records past %d bytes", repo.MaxRecordsBytes)
		return errWalkBound
	}
	s, h := w.s, target.Hash
	w.files[name] = repo.Blob{Hash: h.String(), Size: size, Read: func() ([]byte, error) {
		return readBlob(s, h, repo.MaxRecordBytes)
	}}
	return nil
}

// maxLinks bounds the symlinks one resolution follows, as Go's
// filepath.EvalSymlinks (which validate's safefile.Read uses) does.
const maxLinks = 255

// follow resolves symlink e (at name, in directory dir) as
// filepath.EvalSymlinks resolves it in a checkout: every link on the way
// followed (a chain, a directory that is a link), ".." taken from the path
// resolved so far; the result must be a regular file inside dir. ok is
// false when it was refused.
func (w *treeWalk) follow(dir, name string, e object.TreeEntry) (object.TreeEntry, bool, error) {
	var dest []string // the resolved path, from the repo root
	if dir != "." {
		dest = strings.Split(dir, "/")
	}
	var queue []string
	links := 0
	link := e
	for {
		links++
		if links > maxLinks {
			w.fail(name, "is a symlink to a missing file or a loop")
			return e, false, nil
		}
		n, err := w.sizes(link.Hash)
		if err != nil {
			return e, false, w.missing(name, err)
		}
		if n > maxLinkBytes {
			w.fail(name, "is a symlink of %d bytes; at most %d are read", n, maxLinkBytes)
			return e, false, nil
		}
		target, err := readBlob(w.s, link.Hash, maxLinkBytes)
		if err != nil {
			return e, false, fmt.Errorf("%s: %w", name, err)
		}
		if path.IsAbs(string(target)) {
			w.fail(name, "is a symlink that leaves its directory; only files inside the directory are read")
			return e, false, nil
		}
		queue = append(strings.Split(string(target), "/"), queue...)
		var found *object.TreeEntry
		for found == nil && len(queue) > 0 {
			c := queue[0]
			queue = queue[1:]
			switch c {
			case "", ".":
				continue
			case "..":
				if len(dest) == 0 {
					w.fail(name, "is a symlink that leaves its directory; only files inside the directory are read")
					return e, false, nil
				}
				dest = dest[:len(dest)-1]
				continue
			}
			t, err := w.treeAt(dest)
			if err != nil {
				return e, false, err
			}
			te, ok := entry(t, c)
			switch {
			case !ok:
				w.fail(name, "is a symlink to a missing file or a loop")
				return e, false, nil
			case te.Mode == filemode.Symlink:
				found = &te
			case te.Mode == filemode.Dir:
				dest = append(dest, c)
			case isFile(te.Mode) && !nonEmpty(queue):
				dest = append(dest, c)
				if !strings.HasPrefix(strings.Join(dest, "/"), dir+"/") {
					w.fail(name, "is a symlink that leaves its directory; only files inside the directory are read")
					return e, false, nil
				}
				return te, true, nil
			default: // a file on the way, or a submodule
				w.fail(name, "is a symlink to something that is not a regular file of the directory")
				return e, false, nil
			}
		}
		if found == nil { // the path ended on a directory
			w.fail(name, "is a symlink to something that is not a regular file of the directory")
			return e, false, nil
		}
		link = *found
	}
}

// nonEmpty reports whether path components remain that name something.
func nonEmpty(parts []string) bool {
	for _, p := range parts {
		if p != "" && p != "." {
			return true
		}
	}
	return false
}

// treeAt is the tree of the directory at parts (from the root).
func (w *treeWalk) treeAt(parts []string) (*object.Tree, error) {
	key := strings.Join(parts, "/")
	if len(parts) == 0 {
		key = "."
	}
	if t, ok := w.trees[key]; ok {
		return t, nil
	}
	parent, err := w.treeAt(parts[:len(parts)-1])
	if err != nil {
		return nil, err
	}
	te, _ := entry(parent, parts[len(parts)-1])
	return w.tree(key, te.Hash)
}

// readBlob reads blob h, at most max bytes of it.
func readBlob(s storer.EncodedObjectStorer, h plumbing.Hash, max int64) ([]byte, error) {
	o, err := s.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, err
	}
	if o.Size() > max {
		return nil, fmt.Errorf("blob %s is %d bytes; at most %d are read", h, o.Size(), max)
	}
	r, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("blob %s is larger than %d bytes", h, max)
	}
	return data, nil
}

// maxCommitBytes bounds a commit or tag object (its message is the committer's).
const maxCommitBytes = 1 << 20

// resolveLocal finds the commit the revision (HEAD, a branch, a tag, a
// remote-tracking branch or a commit hash) names in a local repository, peeling annotated tags, each
// object's size checked before it is read.
func resolveLocal(r *git.Repository, rev string) (plumbing.Hash, error) {
	h, found := plumbing.ZeroHash, false
	for _, name := range []plumbing.ReferenceName{plumbing.ReferenceName(rev), plumbing.NewBranchReferenceName(rev),
		plumbing.NewTagReferenceName(rev), plumbing.ReferenceName("refs/remotes/" + rev)} {
		if ref, err := r.Reference(name, true); err == nil {
			h, found = ref.Hash(), true
			break
		}
	}
	if !found {
		if !plumbing.IsHash(rev) {
			return h, fmt.Errorf("revision %q not found (not HEAD, a branch, a tag or a commit hash)", rev)
		}
		h = plumbing.NewHash(rev)
	}
	for i := 0; i < 5; i++ {
		n, err := r.Storer.EncodedObjectSize(h)
		if err != nil {
			return h, fmt.Errorf("object %s: %w", h, err)
		}
		if n > maxCommitBytes {
			return h, fmt.Errorf("object %s is %d bytes; at most %d are read", h, n, maxCommitBytes)
		}
		o, err := r.Storer.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return h, fmt.Errorf("object %s: %w", h, err)
		}
		switch o.Type() {
		case plumbing.CommitObject:
			return h, nil
		case plumbing.TagObject:
			t, err := object.DecodeTag(r.Storer, o)
			if err != nil {
				return h, fmt.Errorf("tag %s: %w", h, err)
			}
			h = t.Target
		default:
			return h, fmt.Errorf("revision %q names a %s, not a commit", rev, o.Type())
		}
	}
	return h, fmt.Errorf("revision %q: too many nested tags", rev)
}

// packedObjects reads a repository's objects for a walk: sizes tells an
// object's size from its header (a loose object's zlib header, a packed
// object's pack header, a fetched object's record in packStorage), and
// store reads a packed delta with packReader. go-git's EncodedObjectSize
// inflates a packed delta's whole data to read the target size at its
// start, and its EncodedObject holds the delta's whole base in memory (a
// record stored as a delta against a huge blob costs the blob); packSizes
// reads only a delta's first bytes and the ranges of its bases the result
// copies. close releases the pack files the sizes opened.
func packedObjects(s storer.EncodedObjectStorer) (store storer.EncodedObjectStorer, sizes sizer, close func()) {
	fs, ok := s.(*filesystem.Storage)
	if !ok {
		return s, s.EncodedObjectSize, func() {}
	}
	p := &packSizes{Storage: fs, dir: dotgit.New(fs.Filesystem()), open: map[plumbing.Hash]io.ReadSeekCloser{}}
	return p, p.size, p.close
}

// packSizes reads object sizes and packed deltas from a repository's packs on disk.
type packSizes struct {
	*filesystem.Storage
	dir    *dotgit.DotGit
	packs  []plumbing.Hash
	idx    []*idxfile.MemoryIndex
	loaded bool
	mu     sync.Mutex // loaded, packs, idx, inflated: a record is read when the loader asks, after the walk
	open   map[plumbing.Hash]io.ReadSeekCloser
	// inflated: bytes inflated rebuilding this commit's deltas (maxResolveBytes).
	inflated int64
}

func (p *packSizes) close() {
	for _, f := range p.open {
		_ = f.Close()
	}
}

func (p *packSizes) load() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loaded {
		return nil
	}
	p.loaded = true
	packs, err := p.dir.ObjectPacks()
	if err != nil {
		return err
	}
	for _, h := range packs {
		f, err := p.dir.ObjectPackIdx(h)
		if err != nil {
			return err
		}
		idx := idxfile.NewMemoryIndex()
		err = idxfile.NewDecoder(f).Decode(idx)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("pack index %s: %w", h, err)
		}
		p.packs, p.idx = append(p.packs, h), append(p.idx, idx)
	}
	return nil
}

// find is the pack holding h and h's offset in it.
func (p *packSizes) find(h plumbing.Hash) (int, int64, bool, error) {
	if err := p.load(); err != nil {
		return 0, 0, false, err
	}
	for i, idx := range p.idx {
		if off, err := idx.FindOffset(h); err == nil {
			return i, off, true, nil
		}
	}
	return 0, 0, false, nil
}

func (p *packSizes) size(h plumbing.Hash) (int64, error) {
	i, off, ok, err := p.find(h)
	if err != nil || !ok {
		if err != nil {
			return 0, err
		}
		return p.Storage.EncodedObjectSize(h) // a loose object: its header
	}
	f, ok := p.open[p.packs[i]]
	if !ok {
		if f, err = p.dir.ObjectPack(p.packs[i]); err != nil {
			return 0, err
		}
		p.open[p.packs[i]] = f
	}
	_, n, err := packedSize(f, off)
	return n, err
}

// EncodedObject implements storer.EncodedObjectStorer: a packed delta is
// rebuilt by packReader, anything else read by go-git.
func (p *packSizes) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	i, off, ok, err := p.find(h)
	if err != nil {
		return nil, err
	}
	if !ok {
		return p.Storage.EncodedObject(t, h)
	}
	f, err := p.dir.ObjectPack(p.packs[i])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	delta, n, err := packedSize(f, off)
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", h, err)
	}
	if !delta {
		return p.Storage.EncodedObject(t, h)
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	idx := p.idx[i]
	p.mu.Lock()
	used := p.inflated
	p.mu.Unlock()
	r := &packReader{ra: f, size: end, inflated: used, offsetOf: func(h plumbing.Hash) (int64, bool) {
		off, err := idx.FindOffset(h)
		return off, err == nil
	}}
	b, ot, err := r.read(off, n)
	p.mu.Lock()
	p.inflated += r.inflated - used
	p.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", h, err)
	}
	if t != plumbing.AnyObject && ot != t {
		return nil, plumbing.ErrObjectNotFound
	}
	// A fetched object is kept by the hash of what was rebuilt; this one
	// is asked for by hash, so check it is what the tree names.
	if got := plumbing.ComputeHash(ot, b); got != h {
		return nil, fmt.Errorf("object %s: rebuilt from its pack as %s", h, got)
	}
	o := &plumbing.MemoryObject{}
	o.SetType(ot)
	o.SetSize(n)
	if _, err := o.Write(b); err != nil {
		return nil, err
	}
	return o, nil
}

// errPrefix stops a copy once the prefix is read.
var errPrefix = errors.New("prefix read")

// prefix keeps the first bytes written to it.
type prefix struct{ b []byte }

func (p *prefix) Write(b []byte) (int, error) {
	n := min(len(b), 32-len(p.b))
	p.b = append(p.b, b[:n]...)
	if len(p.b) == 32 {
		return n, errPrefix
	}
	return len(b), nil
}

// packedSize reads the size of the object at off of pack f, and whether
// it is a delta: the header's size for a whole object, the delta's target
// size for a delta (its first bytes inflated, never the rest).
func packedSize(f io.ReadSeeker, off int64) (bool, int64, error) {
	sc := packfile.NewScanner(f)
	oh, err := sc.SeekObjectHeader(off)
	if err != nil {
		return false, 0, err
	}
	if !oh.Type.IsDelta() {
		return false, oh.Length, nil
	}
	var pre prefix
	if _, _, err := sc.NextObject(&pre); err != nil && !errors.Is(err, errPrefix) {
		return true, 0, err
	}
	n := deltaTargetSize(pre.b)
	if n < 0 {
		return true, 0, fmt.Errorf("a malformed delta at %d", off)
	}
	return true, n, nil
}
