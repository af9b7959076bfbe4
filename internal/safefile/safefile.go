// Package safefile reads files of a gitops checkout without trusting them.
// Whoever commits to the repo chooses every byte and every link, so a file
// is read only when it is a regular file, its resolved path stays inside the
// directory it is read from (Argo CD's out-of-bounds symlink rule), and its
// size is within a bound checked before and while reading: no symlink to a
// sibling cluster, to /etc or to /dev/zero, no FIFO that blocks a read.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// RefusedError says why a file was not read. Path is the name it was asked
// for, relative to the directory it was read from.
type RefusedError struct {
	Path   string
	Reason string
}

func (e *RefusedError) Error() string { return e.Path + ": " + e.Reason }

func refuse(name, format string, args ...any) error {
	return &RefusedError{Path: name, Reason: fmt.Sprintf(format, args...)}
}

// Within reports whether path p lies inside dir (both cleaned absolute or both relative).
func Within(dir, p string) bool {
	if p == dir {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// Read reads name (slash-separated, relative to dir) when it is a regular
// file of at most max bytes whose resolved path stays inside dir. A missing
// file is an error that wraps fs.ErrNotExist.
func Read(dir, name string, max int64) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, refuse(name, "not a path inside its directory")
	}
	realDir, err := resolveDir(dir)
	if err != nil {
		return nil, err
	}
	return readIn(realDir, filepath.Join(realDir, filepath.FromSlash(name)), name, max)
}

// resolveDir is dir's absolute path with symlinks resolved: the directory
// itself is trusted as given (the CMP's working directory, a checkout).
func resolveDir(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	return filepath.Abs(real)
}

// readIn reads p, which must resolve inside realDir.
func readIn(realDir, p, name string, max int64) ([]byte, error) {
	lst, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
		}
		return nil, refuse(name, "cannot be read")
	}
	real := p
	if lst.Mode()&fs.ModeSymlink != 0 {
		real, err = filepath.EvalSymlinks(p)
		if err != nil {
			return nil, refuse(name, "is a symlink to a missing file or a loop")
		}
		if !filepath.IsAbs(real) {
			real = filepath.Join(realDir, real)
		}
		if !Within(realDir, real) {
			return nil, refuse(name, "is a symlink that leaves its directory; only files inside the directory are read")
		}
	}
	st, err := os.Lstat(real)
	if err != nil {
		return nil, refuse(name, "cannot be read")
	}
	if !st.Mode().IsRegular() {
		return nil, refuse(name, "is not a regular file (%s)", describeMode(st.Mode()))
	}
	if st.Size() > max {
		return nil, refuse(name, "is %d bytes; at most %d are read", st.Size(), max)
	}
	// O_NOFOLLOW: the path was resolved above; O_NONBLOCK: a FIFO swapped in
	// since cannot block the open. The descriptor is checked again.
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, refuse(name, "cannot be opened")
	}
	defer f.Close()
	if fst, err := f.Stat(); err != nil || !fst.Mode().IsRegular() {
		return nil, refuse(name, "is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, refuse(name, "cannot be read")
	}
	if int64(len(data)) > max {
		return nil, refuse(name, "is larger than %d bytes", max)
	}
	return data, nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}

// Limits bound a whole tree read by ReadTree.
type Limits struct {
	// FileBytes bounds each file, TotalBytes all of them, Files their number.
	FileBytes, TotalBytes int64
	Files                 int
}

// ReadTree reads every file under dir (dot directories such as .git are
// skipped) into a map keyed by slash path relative to dir. Every file is
// read as Read reads it; a symlink to a directory is refused, so the tree
// read is exactly the tree on disk.
func ReadTree(dir string, lim Limits) (map[string][]byte, error) {
	realDir, err := resolveDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	var total int64
	err = filepath.WalkDir(realDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(realDir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				return refuse(rel, "is a symlink to a directory; use a real directory")
			}
		}
		if len(files) >= lim.Files {
			return refuse(rel, "is past the limit of %d files in the directory", lim.Files)
		}
		b, err := readIn(realDir, p, rel, lim.FileBytes)
		if err != nil {
			return err
		}
		total += int64(len(b))
		if total > lim.TotalBytes {
			return refuse(rel, "brings the directory past %d bytes", lim.TotalBytes)
		}
		files[rel] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}
