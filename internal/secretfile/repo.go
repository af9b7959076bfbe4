package secretfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/safefile"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// ReadCluster reads the secret files of cluster from root's
// clusters/<cluster>/secrets/, keyed by repo path. The folder must be a real
// folder of the repo holding only <name>.sops.yaml regular files, each read
// as safefile reads (bounded, inside the folder); anything else is a
// finding naming it. A missing folder holds no files.
func ReadCluster(root, cluster string) (map[string][]byte, record.Errors) {
	rel := "clusters/" + cluster + "/" + Dir
	dir := filepath.Join(root, filepath.FromSlash(rel))
	var errs record.Errors
	fail := func(p, format string, args ...any) {
		errs = append(errs, record.Error{File: p, Msg: fmt.Sprintf(format, args...)})
	}
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		fail(rel+"/", "cannot be read")
		return nil, errs
	case st.Mode()&fs.ModeSymlink != 0:
		fail(rel+"/", "is a symlink; the secrets folder must be a folder of the repo")
		return nil, errs
	case !st.IsDir():
		fail(rel, "must be a folder of <name>%s files", Suffix)
		return nil, errs
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		fail(rel+"/", "cannot be read")
		return nil, errs
	}
	files := map[string][]byte{}
	for i, e := range entries {
		p := rel + "/" + e.Name()
		// Every entry counts, so a folder of stray names gives one finding, not a million.
		if i >= MaxFiles {
			fail(p, "is past the limit of %d secret files per cluster", MaxFiles)
			break
		}
		if _, _, bad := record.ControlChar(e.Name()); bad {
			fail(rel+"/", "holds a file whose name has a control or invisible character")
			continue
		}
		if !strings.HasSuffix(e.Name(), Suffix) || e.Name() == Suffix {
			fail(p, "only <name>%s files belong in %s/ (one per secret the record lists)", Suffix, rel)
			continue
		}
		b, err := safefile.Read(dir, e.Name(), MaxFileBytes)
		if err != nil {
			var re *safefile.RefusedError
			msg := "cannot be read"
			if errors.As(err, &re) {
				msg = re.Reason
			}
			fail(p, "%s", msg)
			continue
		}
		files[p] = b
	}
	return files, errs
}

// Check compares a cluster record's spec.secrets with its secret files
// (ReadCluster): every listed secret has a file, every file is encrypted
// and its keys are the listed keys (any keys when the record lists none),
// and every file has a record entry.
func Check(c validate.ClusterEntry, files map[string][]byte) record.Errors {
	var errs record.Errors
	name := ClusterDir(c)
	listed := map[string]bool{}
	for i, s := range c.Cluster.Spec.Secrets {
		p := Path(name, s.Name)
		listed[p] = true
		field := fmt.Sprintf("spec.secrets[%d]", i)
		data, ok := files[p]
		if !ok {
			errs = append(errs, record.Error{File: c.File, Line: c.Lines.Line(field + ".name"), Path: field + ".name",
				Msg: fmt.Sprintf("the secret %s has no file %s: encrypt its value with sops --encrypt (docs/secrets.md)", s.Name, p)})
			continue
		}
		errs = append(errs, CheckSecret(p, data, s.Keys, field)...)
	}
	var orphans []string
	for p := range files {
		if !listed[p] {
			orphans = append(orphans, p)
		}
	}
	sort.Strings(orphans)
	for _, p := range orphans {
		errs = append(errs, record.Error{File: p, Msg: fmt.Sprintf(
			"no entry in %s spec.secrets lists it: add the secret to the record, or remove the file (the secret stays in Secrets Manager until deleted by hand)", c.File)})
	}
	return errs
}

// CheckSecret checks the file p of one secret the record lists at field (Parse), and that
// it holds exactly the keys listed (any keys when the record lists none): what validate
// and the sync both require of a file before it is used.
func CheckSecret(p string, data []byte, keys []string, field string) record.Errors {
	f, errs := Parse(p, data)
	if len(errs) > 0 {
		return errs
	}
	return keysMatch(p, f, keys, field)
}

// keysMatch: with keys listed in the record, the file holds exactly those.
func keysMatch(p string, f *File, want []string, field string) record.Errors {
	if len(want) == 0 {
		return nil
	}
	var errs record.Errors
	has := map[string]bool{}
	for _, k := range f.Keys {
		has[k] = true
	}
	wanted := map[string]bool{}
	for _, k := range want {
		wanted[k] = true
		if !has[k] {
			errs = append(errs, record.Error{File: p, Path: k, Msg: fmt.Sprintf("missing: %s.keys lists it", field)})
		}
	}
	for _, k := range f.Keys {
		if !wanted[k] {
			errs = append(errs, record.Error{File: p, Line: f.Lines[k], Path: k, Msg: fmt.Sprintf("is not in %s.keys: list it there or remove it from the file", field)})
		}
	}
	return errs
}

// ClusterDir is the folder name of a record loaded from clusters/<dir>/cluster.yaml
// (which repo.Load holds equal to metadata.name), else its metadata.name.
func ClusterDir(c validate.ClusterEntry) string {
	if d := path.Base(path.Dir(c.File)); path.Dir(path.Dir(c.File)) == "clusters" {
		return d
	}
	return c.Cluster.Metadata.Name
}

// CheckRepo runs Check for every cluster record of the repo at root.
func CheckRepo(root string, clusters []validate.ClusterEntry) record.Errors {
	var errs record.Errors
	for _, c := range clusters {
		if c.Cluster == nil {
			continue
		}
		files, rerrs := ReadCluster(root, ClusterDir(c))
		errs = append(errs, rerrs...)
		errs = append(errs, Check(c, files)...)
	}
	return errs
}
