package repo

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// MemFS is a read-only in-memory file system of record files with its
// directory listings built once: globbing clusters/*/cluster.yaml over
// 10,000 clusters must not scan every file per directory opened. Each file
// also has a content hash (Hash) by which a Loader recognises it.
type MemFS struct {
	files map[string]*memEntry
	dirs  map[string][]fs.DirEntry
}

// memEntry is a file's content, or how to read it when first needed.
type memEntry struct {
	data []byte
	read func() ([]byte, error)
	hash string
	size int64
}

// Blob is a record file known by its git blob hash before its content is
// read: a Loader that has seen the hash never reads it.
type Blob struct {
	Hash string
	Size int64
	Read func() ([]byte, error)
}

// NewMemFS holds files; their hashes are computed when asked for.
func NewMemFS(files map[string][]byte) *MemFS {
	es := make(map[string]*memEntry, len(files))
	for name, data := range files {
		es[name] = &memEntry{data: data, size: int64(len(data))}
	}
	return newMemFS(es)
}

// NewBlobFS holds blobs (a git tree's files), each read on its first Open.
// A Blob's Read must be safe to call again; the content is not kept.
func NewBlobFS(blobs map[string]Blob) *MemFS {
	es := make(map[string]*memEntry, len(blobs))
	for name, b := range blobs {
		es[name] = &memEntry{read: b.Read, hash: b.Hash, size: b.Size}
	}
	return newMemFS(es)
}

func newMemFS(files map[string]*memEntry) *MemFS {
	r := &MemFS{files: files, dirs: map[string][]fs.DirEntry{".": nil}}
	seen := map[string]bool{}
	for name, e := range files {
		child := fileInfo{name: path.Base(name), size: e.size}
		for dir := path.Dir(name); ; dir = path.Dir(dir) {
			r.dirs[dir] = append(r.dirs[dir], fs.FileInfoToDirEntry(child))
			if dir == "." || seen[dir] {
				break
			}
			seen[dir] = true
			child = fileInfo{name: path.Base(dir), dir: true}
		}
	}
	for _, es := range r.dirs {
		sort.Slice(es, func(i, j int) bool { return es[i].Name() < es[j].Name() })
	}
	return r
}

// Hash is the git blob hash of file name: the one its Blob was given, or
// computed from its bytes (so a folder read with ReadFiles and a git tree
// of the same content agree).
func (r *MemFS) Hash(name string) (string, bool) {
	e, ok := r.files[name]
	if !ok {
		return "", false
	}
	if e.hash == "" {
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", len(e.data))
		h.Write(e.data)
		e.hash = hex.EncodeToString(h.Sum(nil))
	}
	return e.hash, true
}

func (e *memEntry) content() ([]byte, error) {
	if e.read == nil {
		return e.data, nil
	}
	return e.read()
}

type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (f fileInfo) Name() string { return f.name }
func (f fileInfo) Size() int64  { return f.size }
func (f fileInfo) Mode() fs.FileMode {
	if f.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (f fileInfo) ModTime() time.Time { return time.Time{} }
func (f fileInfo) IsDir() bool        { return f.dir }
func (f fileInfo) Sys() any           { return nil }

func (r *MemFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if e, ok := r.files[name]; ok {
		data, err := e.content()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &memFile{info: fileInfo{name: path.Base(name), size: int64(len(data))}, r: strings.NewReader(string(data))}, nil
	}
	if es, ok := r.dirs[name]; ok {
		return &memDir{info: fileInfo{name: path.Base(name), dir: true}, entries: es}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (r *MemFS) ReadDir(name string) ([]fs.DirEntry, error) {
	es, ok := r.dirs[name]
	if !ok {
		if _, isFile := r.files[name]; isFile {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
		}
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return append([]fs.DirEntry(nil), es...), nil
}

func (r *MemFS) ReadFile(name string) ([]byte, error) {
	e, ok := r.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrNotExist}
	}
	if e.read != nil {
		data, err := e.read()
		if err != nil {
			return nil, &fs.PathError{Op: "readfile", Path: name, Err: err}
		}
		return data, nil
	}
	return append([]byte(nil), e.data...), nil
}

type memFile struct {
	info fileInfo
	r    *strings.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *memFile) Close() error               { return nil }

type memDir struct {
	info    fileInfo
	entries []fs.DirEntry
	off     int
}

func (d *memDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: fs.ErrInvalid}
}
func (d *memDir) Close() error { return nil }
func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n <= 0 {
		d.off = len(d.entries)
		return append([]fs.DirEntry(nil), rest...), nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if n > len(rest) {
		n = len(rest)
	}
	d.off += n
	return append([]fs.DirEntry(nil), rest[:n]...), nil
}
