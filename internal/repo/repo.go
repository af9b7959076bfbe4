// Package repo reads a spokeforge gitops repo (clusters/, orgs/,
// products/) into validated records, collecting every finding in one pass.
package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/safefile"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// ClusterFile is the record's file name inside clusters/<name>/.
const ClusterFile = "cluster.yaml"

// Repo is a loaded gitops repo.
type Repo struct {
	Clusters []validate.ClusterEntry
	Orgs     []validate.OrgEntry
	Products []validate.ProductEntry
}

// MaxRecordBytes bounds one record file; a record is a few KiB.
const MaxRecordBytes = 1 << 20

// MaxRecordsBytes bounds all the record files of a repo together (10,000
// clusters of a few KiB each are tens of MiB).
const MaxRecordsBytes = 256 << 20

// MaxDirEntries bounds the entries listed in one directory of the repo
// (clusters/ holds one per cluster).
const MaxDirEntries = 100_000

// decode parses file from fsys into out; display is the name used in
// errors. A failed read is a fileResult a Loader does not keep: it says
// nothing about the content its hash names.
func decode(fsys fs.FS, l *Loader, name, display string, out any) (record.Lines, *fileResult) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			msg = "file not found"
		}
		return nil, &fileResult{errs: record.Errors{{File: display, Msg: msg}}, unread: true}
	}
	var strs map[string]string
	if l != nil {
		strs = l.strs
	}
	lines, errs := decodeBytes(display, data, out, strs)
	if errs != nil {
		return lines, &fileResult{errs: errs}
	}
	return lines, nil
}

// withFieldChecks is the findings of a record that decoded with errors (an
// unknown field, a value of the wrong type) together with those of its field
// checks, run on what did decode (lines non-nil), so that one run reports
// every mistake of a record. A check finding on a path that failed to
// decode, or inside or around one, is left out: the field holds no value
// there, and the finding would only repeat the decoding error.
func withFieldChecks(decodeErrs record.Errors, lines record.Lines, check func() record.Errors) record.Errors {
	if lines == nil {
		return decodeErrs
	}
	all := decodeErrs
	for _, e := range check() {
		related := false
		for _, d := range decodeErrs {
			if pathsOverlap(d.Path, e.Path) {
				related = true
				break
			}
		}
		if !related {
			all = append(all, e)
		}
	}
	return sortErrors(all)
}

// pathsOverlap reports whether one field path is the other or inside it
// ("spec.gpu" and "spec.gpu.nodes[0].count"); "" is the whole record.
func pathsOverlap(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if a == "" || a == b {
		return true
	}
	return strings.HasPrefix(b, a) && (b[len(a)] == '.' || b[len(a)] == '[')
}

// SecretField reports the record fields that may hold a credential (the
// refused inline forms under spec.connection.credentials): no message
// repeats their values.
func SecretField(path string) bool {
	return strings.HasPrefix(path, "spec.connection.credentials")
}

// DecodeBytes parses one record from data. With decoding errors, out holds
// what decoded and the lines are non-nil when the document parsed.
func DecodeBytes(display string, data []byte, out any) (record.Lines, record.Errors) {
	return decodeBytes(display, data, out, nil)
}

// decodeBytes is DecodeBytes taking decoded strings' canonical copies from
// strs (record.Document.Strings) when it is not nil.
func decodeBytes(display string, data []byte, out any, strs map[string]string) (record.Lines, record.Errors) {
	doc, err := record.Parse(display, data)
	if err != nil {
		return nil, asErrors(err)
	}
	doc.Secret, doc.Strings = secretField, strs
	lines, err := doc.Decode(out)
	if err != nil {
		return lines, asErrors(err)
	}
	return lines, nil
}

func asErrors(err error) record.Errors {
	var es record.Errors
	if errors.As(err, &es) {
		return es
	}
	var e record.Error
	if errors.As(err, &e) {
		return record.Errors{e}
	}
	return record.Errors{{Msg: err.Error()}}
}

// ParseCluster decodes and validates a cluster record and derives its names.
func ParseCluster(display string, data []byte) (validate.ClusterEntry, record.Errors) {
	return parseCluster(display, "", data, nil)
}

// parseCluster decodes and checks a cluster record whose directory is
// dirName ("" not checked), interning strings in strs when not nil; its
// findings never hold a text of connection.credentials (scrubCredentials).
func parseCluster(display, dirName string, data []byte, strs map[string]string) (validate.ClusterEntry, record.Errors) {
	var c v1alpha1.Cluster
	lines, errs := decodeBytes(display, data, &c, strs)
	if errs != nil {
		return validate.ClusterEntry{}, scrubCredentials(data, withFieldChecks(errs, lines, func() record.Errors {
			_, cerrs := checkCluster(display, dirName, lines, &c)
			return cerrs
		}))
	}
	e, errs := checkCluster(display, dirName, lines, &c)
	return e, scrubCredentials(data, errs)
}

func checkCluster(display, dirName string, lines record.Lines, c *v1alpha1.Cluster) (validate.ClusterEntry, record.Errors) {
	e := validate.ClusterEntry{Loc: validate.Loc{File: display, Lines: lines}, Cluster: c}
	n, errs := validate.Cluster(display, lines, c)
	// One identity per record: the directory names the cluster, so a record
	// cannot render or be placed as another cluster than its path says.
	if n := c.Metadata.Name; dirName != "" && n != "" && n != dirName {
		errs = append(errs, record.Error{File: display, Line: lines.Line("metadata.name"), Path: "metadata.name",
			Msg: fmt.Sprintf("%q differs from its directory clusters/%s: the directory must be named after the cluster", n, dirName)})
	}
	if len(errs) > 0 {
		return e, errs
	}
	e.Names = n
	return e, nil
}

// LoadCluster reads <dir>/cluster.yaml (a regular file inside dir, bounded);
// errors name it as <displayDir>/cluster.yaml. The record's metadata.name
// must equal the directory's name: displayDir's last element, or dir's when
// displayDir is "." or empty. In the CMP, displayDir is the Application's
// source path (ARGOCD_APP_SOURCE_PATH) and dir the sidecar's working copy,
// whose own name is a random one when the repo-server sends only the
// annotated paths (manifest-generate-paths; docs/cmp.md).
func LoadCluster(dir, displayDir string) (validate.ClusterEntry, record.Errors) {
	display := filepath.ToSlash(filepath.Join(displayDir, ClusterFile))
	data, err := safefile.Read(dir, ClusterFile, MaxRecordBytes)
	if err != nil {
		msg := reason(err)
		if errors.Is(err, fs.ErrNotExist) {
			msg = "file not found"
		}
		return validate.ClusterEntry{}, record.Errors{{File: display, Msg: msg}}
	}
	dirName := path.Base(filepath.ToSlash(filepath.Clean(displayDir)))
	if dirName == "." || dirName == "/" || displayDir == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return validate.ClusterEntry{}, record.Errors{{File: display, Msg: "cannot resolve its directory"}}
		}
		dirName = filepath.Base(abs)
	}
	return parseCluster(display, dirName, data, nil)
}

// Load reads every record of the repo checked out at root (ReadFiles) and
// checks it, field by field and across files. It returns all findings,
// sorted by file and line.
func Load(root string) (*Repo, record.Errors) {
	files, readErrs := ReadFiles(root)
	r, errs := LoadFS(NewMemFS(files))
	if len(readErrs) > 0 {
		errs = sortErrors(append(errs, readErrs...))
	}
	return r, errs
}

// LoadFS is Load over files already read (ReadFiles, or a git tree); file
// names in errors are relative to its root.
func LoadFS(fsys fs.FS) (*Repo, record.Errors) {
	return load(fsys, nil)
}

// Loader loads one commit after another, reusing each record file's decoded
// and checked result (its entry and findings) when the file has the same
// path and git blob hash as in the previous Load: only changed files are
// read and parsed. The per-file result depends on nothing but the path and
// the bytes, and the cross-file rules run over the whole repo every time, so
// a Load returns exactly what LoadFS returns for the same files, findings
// included, except that its entries' Lines hold only the lines the
// cross-file rules read (validate.ClusterEntry.TrimLines). A Loader is not
// safe for concurrent use; the entries it hands out are shared with later
// Loads and must not be modified.
type Loader struct {
	prev, next map[fileKey]*fileResult
	// strs interns the strings of the records one Load decodes
	// (record.Document.Strings); dropped when the Load returns.
	strs map[string]string
	// Reused and Parsed count the files of the last Load.
	Reused, Parsed int
}

type fileKey struct{ path, hash string }

// fileResult is what one record file contributes to a Repo.
type fileResult struct {
	cluster validate.ClusterEntry
	org     validate.OrgEntry
	product validate.ProductEntry
	kept    bool // the record decoded, so the cross-file rules see it
	unread  bool // reading failed: not kept for the next Load
	errs    record.Errors
}

// trimLines drops the lines the cross-file rules never read from a result
// a Loader keeps (validate.ClusterEntry.TrimLines): the per-file checks have
// run, and the full line maps would be most of what a fleet repo keeps.
func (r *fileResult) trimLines(l *Loader) {
	switch {
	case l == nil:
	case r.cluster.Cluster != nil:
		r.cluster.TrimLines(l.intern)
	case r.org.Org != nil:
		r.org.TrimLines(l.intern)
	case r.product.Product != nil:
		r.product.TrimLines(l.intern)
	}
}

// intern gives the one copy of s this Load keeps (strs).
func (l *Loader) intern(s string) string {
	if v, ok := l.strs[s]; ok {
		return v
	}
	l.strs[s] = s
	return s
}

// Hasher is an fs.FS that knows its files' git blob hashes (MemFS).
type Hasher interface {
	Hash(name string) (string, bool)
}

// Load is LoadFS, reusing what the previous Load parsed when fsys is a
// Hasher; any other fs.FS is read whole.
func (l *Loader) Load(fsys fs.FS) (*Repo, record.Errors) {
	l.next, l.Reused, l.Parsed = make(map[fileKey]*fileResult, len(l.prev)), 0, 0
	l.strs = map[string]string{}
	r, errs := load(fsys, l)
	l.prev, l.next, l.strs = l.next, nil, nil
	return r, errs
}

// file returns the result for name: the previous Load's when its hash is
// unchanged, else parse's.
func (l *Loader) file(fsys fs.FS, name string, parse func() *fileResult) *fileResult {
	if l == nil {
		return parse()
	}
	h, ok := fsys.(Hasher)
	if !ok {
		l.Parsed++
		return parse()
	}
	hash, ok := h.Hash(name)
	if !ok {
		l.Parsed++
		return parse()
	}
	k := fileKey{name, hash}
	res, ok := l.prev[k]
	if ok {
		l.Reused++
	} else {
		l.Parsed++
		res = parse()
	}
	if !res.unread {
		l.next[k] = res
	}
	return res
}

func load(fsys fs.FS, l *Loader) (*Repo, record.Errors) {
	r := &Repo{}
	var all record.Errors
	clusterDirs, _ := fs.Glob(fsys, "clusters/*/"+ClusterFile)
	if len(clusterDirs) == 0 {
		all = append(all, record.Error{File: "clusters/", Msg: "no cluster records (clusters/<name>/cluster.yaml)"})
	}
	for _, f := range clusterDirs {
		res := l.file(fsys, f, func() *fileResult {
			var c v1alpha1.Cluster
			lines, failed := decode(fsys, l, f, f, &c)
			// Read again only for findings, which never hold a credential's text.
			scrub := func(errs record.Errors) record.Errors {
				if len(errs) == 0 {
					return errs
				}
				data, _ := fs.ReadFile(fsys, f)
				return scrubCredentials(data, errs)
			}
			if failed != nil {
				failed.errs = scrub(withFieldChecks(failed.errs, lines, func() record.Errors {
					_, errs := checkCluster(f, path.Base(path.Dir(f)), lines, &c)
					return errs
				}))
				return failed
			}
			e, errs := checkCluster(f, path.Base(path.Dir(f)), lines, &c)
			res := &fileResult{cluster: e, kept: true, errs: scrub(errs)}
			res.trimLines(l)
			return res
		})
		if res.kept {
			r.Clusters = append(r.Clusters, res.cluster)
		}
		all = append(all, res.errs...)
	}
	all = append(all, loadEach(fsys, l, "orgs/*.yaml", validate.Org, func(loc validate.Loc, o *v1alpha1.Organization) *fileResult {
		return &fileResult{org: validate.OrgEntry{Loc: loc, Org: o}}
	}, func(res *fileResult) { r.Orgs = append(r.Orgs, res.org) })...)
	all = append(all, loadEach(fsys, l, "products/*/*.yaml", validate.Product, func(loc validate.Loc, p *v1alpha1.Product) *fileResult {
		return &fileResult{product: validate.ProductEntry{Loc: loc, Org: path.Base(path.Dir(loc.File)), Product: p}}
	}, func(res *fileResult) { r.Products = append(r.Products, res.product) })...)
	all = append(all, validate.CrossFile(r.Clusters, r.Orgs, r.Products, present(fsys, clusterDirs))...)
	return r, sortErrors(all)
}

// present names the clusters and orgs that have a record file, whether or
// not it decoded.
func present(fsys fs.FS, clusterFiles []string) validate.Present {
	p := validate.Present{Clusters: make(map[string]bool, len(clusterFiles)), Orgs: map[string]bool{}}
	for _, f := range clusterFiles {
		p.Clusters[path.Base(path.Dir(f))] = true
	}
	orgs, _ := fs.Glob(fsys, "orgs/*.yaml")
	for _, f := range orgs {
		p.Orgs[strings.TrimSuffix(path.Base(f), ".yaml")] = true
	}
	return p
}

func sortErrors(all record.Errors) record.Errors {
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].File != all[j].File {
			return all[i].File < all[j].File
		}
		return all[i].Line < all[j].Line
	})
	return all
}

// loadEach decodes and checks every file matching glob; wrap makes a
// decoded record's result and keep hands it to the Repo (also when it has
// findings, so cross-file rules still see it).
func loadEach[T any](fsys fs.FS, l *Loader, glob string, check func(string, record.Lines, *T) record.Errors,
	wrap func(validate.Loc, *T) *fileResult, keep func(*fileResult)) record.Errors {
	var all record.Errors
	files, _ := fs.Glob(fsys, glob)
	for _, f := range files {
		res := l.file(fsys, f, func() *fileResult {
			v := new(T)
			lines, failed := decode(fsys, l, f, f, v)
			if failed != nil {
				failed.errs = withFieldChecks(failed.errs, lines, func() record.Errors { return check(f, lines, v) })
				return failed
			}
			res := wrap(validate.Loc{File: f, Lines: lines}, v)
			res.kept, res.errs = true, check(f, lines, v)
			res.trimLines(l)
			return res
		})
		if res.kept {
			keep(res)
		}
		all = append(all, res.errs...)
	}
	return all
}
