package repo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/safefile"
)

// ReadFiles reads the record files of the repo checked out at root
// (clusters/*/cluster.yaml, orgs/*.yaml, products/*/*.yaml) the way every
// spokeforge reader must: record directories are real directories, each
// file is regular, bounded and resolves inside its own directory. Anything
// refused is a finding naming the file, never a file silently left out.
func ReadFiles(root string) (map[string][]byte, record.Errors) {
	files := map[string][]byte{}
	var errs record.Errors
	fail := func(p, format string, args ...any) {
		errs = append(errs, record.Error{File: p, Msg: fmt.Sprintf(format, args...)})
	}
	// dirs lists the real directories under rel (a symlink in their place is a finding).
	dirs := func(rel string) []string {
		es, ok := listDir(root, rel, fail)
		if !ok {
			return nil
		}
		var out []string
		for _, e := range es {
			p := path.Join(rel, e.Name())
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				fail(p+"/", "is a symlink; a record directory must be a directory of the repo")
			case e.IsDir():
				out = append(out, p)
			}
		}
		return out
	}
	var total int64
	read := func(dir, name string) {
		p := path.Join(dir, name)
		if total > MaxRecordsBytes {
			return // refused once already
		}
		b, err := safefile.Read(filepath.Join(root, filepath.FromSlash(dir)), name, MaxRecordBytes)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				fail(p, "%s", reason(err))
			}
			return
		}
		if total += int64(len(b)); total > MaxRecordsBytes {
			fail(p, "brings the records past %d bytes", MaxRecordsBytes)
			return
		}
		files[p] = b
	}
	// records reads every *.yaml in dir and refuses names a reader would skip.
	records := func(dir string) {
		es, ok := listDir(root, dir, fail)
		if !ok {
			return
		}
		for _, e := range es {
			p := path.Join(dir, e.Name())
			switch ext := path.Ext(e.Name()); {
			case ext == ".yml":
				fail(p, "records are read from .yaml files only: rename it to %s.yaml", strings.TrimSuffix(e.Name(), ext))
			case ext != ".yaml":
			case e.IsDir():
				fail(p, "is a directory; a record must be a file")
			default:
				read(dir, e.Name())
			}
		}
	}
	for _, d := range dirs("clusters") {
		read(d, ClusterFile)
		if _, err := os.Lstat(filepath.Join(root, d, "cluster.yml")); err == nil {
			fail(d+"/cluster.yml", "a cluster record is read from %s only: rename it", ClusterFile)
		}
	}
	records("orgs")
	for _, d := range dirs("products") {
		records(d)
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].File < errs[j].File })
	return files, errs
}

// listDir lists root/rel, which must be a real directory; a missing one is empty.
func listDir(root, rel string, fail func(string, string, ...any)) ([]fs.DirEntry, bool) {
	p := filepath.Join(root, filepath.FromSlash(rel))
	st, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false
	case err != nil:
		fail(rel+"/", "cannot be read")
		return nil, false
	case st.Mode()&fs.ModeSymlink != 0:
		fail(rel+"/", "is a symlink; a record directory must be a directory of the repo")
		return nil, false
	case !st.IsDir():
		fail(rel, "must be a directory")
		return nil, false
	}
	es, err := readDir(p, MaxDirEntries)
	switch {
	case errors.Is(err, errTooMany):
		fail(rel+"/", "has more than %d entries; at most %d are listed", MaxDirEntries, MaxDirEntries)
		return nil, false
	case err != nil:
		fail(rel+"/", "cannot be read")
		return nil, false
	}
	return es, true
}

var errTooMany = errors.New("too many entries")

// readDir lists directory p, sorted by name, when it has at most max
// entries: a directory of millions is refused after max+1 are read.
func readDir(p string, max int) ([]fs.DirEntry, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var es []fs.DirEntry
	for {
		chunk, err := f.ReadDir(1024)
		es = append(es, chunk...)
		if len(es) > max {
			return nil, errTooMany
		}
		if errors.Is(err, io.EOF) || (err == nil && len(chunk) == 0) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Name() < es[j].Name() })
	return es, nil
}

// reason is the message of a refused read without the path (the finding carries it).
func reason(err error) string {
	var re *safefile.RefusedError
	if errors.As(err, &re) {
		return re.Reason
	}
	return "cannot be read"
}
