package repo

import (
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// MemFS is a read-only in-memory file system of record files with its
// directory listings built once: globbing clusters/*/cluster.yaml over
// 10,000 clusters must not scan every file per directory opened.
type MemFS struct {
	files map[string][]byte
	dirs  map[string][]fs.DirEntry
}

func NewMemFS(files map[string][]byte) *MemFS {
	r := &MemFS{files: files, dirs: map[string][]fs.DirEntry{".": nil}}
	seen := map[string]bool{}
	for name, data := range files {
		child := fileInfo{name: path.Base(name), size: int64(len(data))}
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
	if data, ok := r.files[name]; ok {
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
	data, ok := r.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrNotExist}
	}
	return append([]byte(nil), data...), nil
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
