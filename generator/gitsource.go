package generator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// GitConfig says where the gitops repo is and how to reach it.
type GitConfig struct {
	// Repo is a git URL (https://, ssh://, user@host:path, file://) or a
	// local directory (a git work tree, read at Revision, or a plain folder).
	Repo string
	// Revision is a branch, tag or HEAD (default).
	Revision string
	// Credentials, each read from a file at every fetch (rotation-safe).
	UsernameFile, PasswordFile string // https basic auth; a token goes in PasswordFile
	SSHKeyFile, KnownHostsFile string // ssh; KnownHostsFile is required with ssh
	// MaxStaleness: once the repo has not been fetched successfully for this
	// long, answers are refused (503) instead of served from an old snapshot.
	MaxStaleness time.Duration
	// ConfirmHead: every answer first checks the revision's commit in the
	// repo (ls-remote, shared by the requests that arrive meanwhile) and
	// loads it when it moved, so replicas behind one Service never answer
	// from different commits. Without it a replica answers from its last
	// fetch. A plain folder is never checked.
	ConfirmHead bool
	App         AppSource
	Log         *slog.Logger
}

// GitSource fetches the repo and keeps the last good snapshot.
type GitSource struct {
	cfg GitConfig

	fetchMu sync.Mutex // one fetch at a time; a refresh waits for a running one
	loader  *Loader    // under fetchMu
	// refreshed is the last refresh to finish: the head checks started
	// before it began, and its error (under fetchMu).
	refreshed struct {
		headSeq uint64
		err     error
	}

	headMu   sync.Mutex
	headSeq  uint64     // head checks started
	headCall *headCheck // the latest

	mu     sync.RWMutex
	snap   *Snapshot
	status SourceStatus
	hash   string // content hash of a plain folder's records

	loads    *prometheus.CounterVec
	loadTime prometheus.Histogram
}

// NewGitSource checks cfg; nothing is fetched until Refresh or Run.
func NewGitSource(cfg GitConfig) (*GitSource, error) {
	if cfg.Repo == "" {
		return nil, errors.New("the gitops repo is required")
	}
	if cfg.Revision == "" {
		cfg.Revision = "HEAD"
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	if hasPassword(cfg.Repo) {
		// go-git's transport errors quote the URL whole, and errors reach logs and 503 bodies.
		return nil, fmt.Errorf("repo %s carries a password: give it with --git-password-file", redactURL(cfg.Repo))
	}
	if isSSH(cfg.Repo) && (cfg.SSHKeyFile == "" || cfg.KnownHostsFile == "") {
		return nil, fmt.Errorf("ssh repo %s needs --git-ssh-key-file and --git-known-hosts-file (host keys are always checked)", redactURL(cfg.Repo))
	}
	return &GitSource{cfg: cfg, loader: NewLoader(cfg.App),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "spokeforge_generator_repo_loads_total",
			Help: "Repo checks by result: unchanged, loaded, invalid (last good snapshot kept), fetch_error.",
		}, []string{"result"}),
		loadTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "spokeforge_generator_snapshot_load_seconds",
			Help:    "Time to read, validate and index a new snapshot.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
	}, nil
}

func (g *GitSource) collectors() []prometheus.Collector {
	return []prometheus.Collector{g.loads, g.loadTime}
}

var scpLike = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:`)

func isSSH(u string) bool { return strings.HasPrefix(u, "ssh://") || scpLike.MatchString(u) }

// IsRemote reports whether u is a git URL rather than a local path.
func IsRemote(u string) bool { return strings.Contains(u, "://") || scpLike.MatchString(u) }

// hasPassword reports whether the URL u has user info with a password (user:pass@).
func hasPassword(u string) bool {
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		at := strings.Index(rest, "@")
		return at >= 0 && at < strings.IndexAny(rest+"/", "/") && strings.Contains(rest[:at], ":")
	}
	return false
}

// redactURL drops any user info from u, for logs and errors.
func redactURL(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		if at := strings.Index(rest, "@"); at >= 0 && at < strings.IndexAny(rest+"/", "/") {
			return u[:i+3] + "***@" + rest[at+1:]
		}
	}
	return u
}

// Snapshot implements Source.
func (g *GitSource) Snapshot() (*Snapshot, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.snap == nil {
		if msg := statusLine(g.status); g.status.FetchError != "" || g.status.HeadError != "" {
			return nil, fmt.Errorf("the repo was never loaded: %s", msg)
		}
		return nil, errors.New("the repo was never loaded yet")
	}
	if g.cfg.MaxStaleness > 0 && time.Since(g.status.LastFetch) > g.cfg.MaxStaleness {
		return nil, fmt.Errorf("repo unreachable: no successful fetch for %s (limit %s): %s",
			time.Since(g.status.LastFetch).Round(time.Second), g.cfg.MaxStaleness, g.status.FetchError)
	}
	return g.snap, nil
}

// headCheck is one look at the revision's commit, shared by the requests
// that arrived before it started.
type headCheck struct {
	seq  uint64
	done chan struct{}
	head string
	err  error
}

// errPlainFolder: a folder that is not a git repository has no head to check.
var errPlainFolder = errors.New("not a git repository")

// Current implements Source: with ConfirmHead, the snapshot of the commit
// the revision names now, loaded first if it moved. When that commit is
// invalid every replica serves its last good snapshot, as without the check.
func (g *GitSource) Current(ctx context.Context) (*Snapshot, error) {
	if !g.cfg.ConfirmHead {
		return g.Snapshot()
	}
	head, seq, err := g.confirmHead(ctx)
	switch {
	case errors.Is(err, errPlainFolder):
		return g.Snapshot()
	case err != nil:
		return nil, fmt.Errorf("cannot confirm the repo head: %w", err)
	}
	if !g.loaded(head) {
		if err := g.refreshSince(ctx, head, seq); err != nil {
			return nil, fmt.Errorf("the repo head %s is not loaded: %w", head, err)
		}
	}
	return g.Snapshot()
}

// loaded reports whether commit head is served, or was found invalid.
func (g *GitSource) loaded(head string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.snap != nil && g.status.Commit == head || g.status.Head == head && g.status.HeadError != ""
}

// refreshSince loads head, which head check seq saw. The requests that
// wait on one head move share one refresh instead of each listing the
// remote again in turn: once a refresh has loaded head the others are done,
// and a refresh that began after check seq started and failed is their
// answer too (it listed the remote after they arrived) — unless it failed
// only because its own caller went away.
func (g *GitSource) refreshSince(ctx context.Context, head string, seq uint64) error {
	g.fetchMu.Lock()
	defer g.fetchMu.Unlock()
	if g.loaded(head) {
		return nil
	}
	if err := g.refreshed.err; g.refreshed.headSeq >= seq && err != nil &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	_, err := g.refreshLocked(ctx)
	return err
}

// confirmHead returns the revision's commit as found by a check that
// started after the call, and that check's sequence number: a request never
// trusts a look taken before it arrived, yet concurrent requests share one.
func (g *GitSource) confirmHead(ctx context.Context) (string, uint64, error) {
	g.headMu.Lock()
	arrived := g.headSeq
	for {
		c := g.headCall
		if c != nil && c.seq > arrived {
			g.headMu.Unlock()
			select {
			case <-c.done:
				return c.head, c.seq, c.err
			case <-ctx.Done():
				return "", 0, ctx.Err()
			}
		}
		if c != nil {
			select {
			case <-c.done:
			default:
				// An older check is running: wait for it, then start the next.
				g.headMu.Unlock()
				select {
				case <-c.done:
				case <-ctx.Done():
					return "", 0, ctx.Err()
				}
				g.headMu.Lock()
				continue
			}
		}
		g.headSeq++
		c = &headCheck{seq: g.headSeq, done: make(chan struct{})}
		g.headCall = c
		g.headMu.Unlock()
		// Not the caller's context: others may be waiting on this check.
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c.head, c.err = g.head(cctx)
		cancel()
		close(c.done)
		return c.head, c.seq, c.err
	}
}

// head lists the revision's commit without fetching it.
func (g *GitSource) head(ctx context.Context) (string, error) {
	if !IsRemote(g.cfg.Repo) {
		r, err := git.PlainOpen(g.cfg.Repo)
		if err != nil {
			return "", errPlainFolder
		}
		h, err := resolveLocal(r, g.cfg.Revision)
		if err != nil {
			return "", fmt.Errorf("revision %s in %s: %w", g.cfg.Revision, g.cfg.Repo, err)
		}
		return h.String(), nil
	}
	auth, err := g.auth()
	if err != nil {
		return "", err
	}
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{g.cfg.Repo}})
	_, hash, err := g.listRevision(ctx, remote, auth)
	if err != nil {
		return "", err
	}
	return hash.String(), nil
}

// listRevision resolves the revision on the remote: by its candidate refs
// alone (lsRefs), or, from a server that lists them all, among all refs.
func (g *GitSource) listRevision(ctx context.Context, remote *git.Remote, auth transport.AuthMethod) (plumbing.ReferenceName, plumbing.Hash, error) {
	refs, err := lsRefs(ctx, g.cfg.Repo, auth, g.cfg.Revision)
	if errors.Is(err, errNoV2) {
		refs, err = remote.ListContext(ctx, &git.ListOptions{Auth: auth})
	}
	if err != nil {
		return "", plumbing.ZeroHash, fmt.Errorf("listing %s: %w", redactURL(g.cfg.Repo), err)
	}
	ref, hash, err := resolveRef(refs, g.cfg.Revision)
	if err != nil {
		return "", plumbing.ZeroHash, fmt.Errorf("%s: %w", redactURL(g.cfg.Repo), err)
	}
	return ref, hash, nil
}

// Status implements Source.
func (g *GitSource) Status() SourceStatus {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.status
}

// Run refreshes every interval until ctx ends.
func (g *GitSource) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_, _ = g.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh implements Source: fetch the head, and load it if it changed.
// A fetch failure or an invalid head keeps the served snapshot.
func (g *GitSource) Refresh(ctx context.Context) (SourceStatus, error) {
	g.fetchMu.Lock()
	defer g.fetchMu.Unlock()
	return g.refreshLocked(ctx)
}

// refreshLocked is Refresh under fetchMu; it records itself in g.refreshed.
func (g *GitSource) refreshLocked(ctx context.Context) (st SourceStatus, err error) {
	g.headMu.Lock()
	started := g.headSeq
	g.headMu.Unlock()
	defer func() { g.refreshed.headSeq, g.refreshed.err = started, err }()
	commit, files, refused, err := g.fetch(ctx)
	now := time.Now()
	if err != nil {
		g.loads.WithLabelValues("fetch_error").Inc()
		g.mu.Lock()
		g.status.FetchError = err.Error()
		st := g.status
		g.mu.Unlock()
		g.cfg.Log.Warn("repo fetch failed; serving the last good snapshot", "repo", redactURL(g.cfg.Repo), "error", err.Error(), "serving", st.Commit)
		return st, err
	}
	g.mu.RLock()
	unchanged := g.snap != nil && g.status.Commit == commit
	headUnchanged := g.status.Head == commit && g.status.HeadError != ""
	g.mu.RUnlock()
	if unchanged || headUnchanged {
		g.loads.WithLabelValues("unchanged").Inc()
		g.mu.Lock()
		g.status.FetchError, g.status.LastFetch = "", now
		if unchanged {
			g.status.ConfirmedAt = now
		}
		st := g.status
		g.mu.Unlock()
		return st, nil
	}
	start := time.Now()
	var snap *Snapshot
	errs := refused
	if len(errs) == 0 {
		// A refused file (a symlink leaving its directory, a device, an
		// oversized record) rejects the commit: answering without it would
		// shrink a list.
		snap, errs = g.loader.Load(files, commit)
	}
	reused, parsed := g.loader.Reuse()
	g.loadTime.Observe(time.Since(start).Seconds())
	g.mu.Lock()
	defer g.mu.Unlock()
	g.status.FetchError, g.status.LastFetch, g.status.Head = "", now, commit
	if len(errs) > 0 {
		g.loads.WithLabelValues("invalid").Inc()
		g.status.HeadError = fmt.Sprintf("%d error(s), first: %s", len(errs), errs[0].Error())
		g.status.HeadErrors = nil
		for i, e := range errs {
			if i == 20 {
				g.status.HeadErrors = append(g.status.HeadErrors, fmt.Sprintf("... and %d more", len(errs)-20))
				break
			}
			g.status.HeadErrors = append(g.status.HeadErrors, e.Error())
		}
		g.cfg.Log.Error("repo head is invalid; serving the last good snapshot", "head", commit, "serving", g.status.Commit,
			"errors", len(errs), "first", errs[0].Error())
		return g.status, nil
	}
	g.loads.WithLabelValues("loaded").Inc()
	c, o, z := snap.Counts()
	g.snap = snap
	g.status.Commit, g.status.LoadedAt, g.status.ConfirmedAt = commit, now, now
	g.status.HeadError, g.status.HeadErrors = "", nil
	g.cfg.Log.Info("repo snapshot loaded", "commit", commit, "clusters", c, "orgs", o, "zones", z,
		"files_reused", reused, "files_parsed", parsed, "load_ms", time.Since(start).Milliseconds())
	return g.status, nil
}

// recordGlobs are the files repo.LoadFS reads (walkCommit lists them).
var recordGlobs = []string{"clusters/*/" + repo.ClusterFile, "orgs/*.yaml", "products/*/*.yaml"}

// fetch returns the head commit, its record files and the files it refused.
func (g *GitSource) fetch(ctx context.Context) (string, fs.FS, record.Errors, error) {
	if IsRemote(g.cfg.Repo) {
		return g.fetchRemote(ctx)
	}
	// Only a directory that is itself the repository root: a subfolder of a work
	// tree must be read as a plain folder, not as its repository's root tree.
	if r, err := git.PlainOpen(g.cfg.Repo); err == nil {
		h, err := resolveLocal(r, g.cfg.Revision)
		if err != nil {
			return "", nil, nil, fmt.Errorf("revision %s in %s: %w", g.cfg.Revision, g.cfg.Repo, err)
		}
		return g.commitFiles(r, h)
	}
	return g.readDir()
}

// readDir reads a plain folder as every spokeforge reader does
// (repo.ReadFiles); its "commit" is a hash of the records.
func (g *GitSource) readDir() (string, fs.FS, record.Errors, error) {
	if st, err := os.Stat(g.cfg.Repo); err != nil || !st.IsDir() {
		return "", nil, nil, fmt.Errorf("repo %s is neither a git URL nor a directory", g.cfg.Repo)
	}
	files, refused := repo.ReadFiles(g.cfg.Repo)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	sum := sha256.New()
	for _, n := range names {
		fmt.Fprintf(sum, "%s\x00%d\x00", n, len(files[n]))
		sum.Write(files[n])
	}
	for _, e := range refused {
		fmt.Fprintf(sum, "refused\x00%s\x00", e.Error())
	}
	return "dir-" + hex.EncodeToString(sum.Sum(nil))[:12], repo.NewMemFS(files), refused, nil
}

// fetchRemote lists the remote's refs; when the revision moved it fetches
// just that commit (depth 1) into a fresh in-memory repository, so memory
// holds one tree, never the history, and of that tree only the objects a
// walk may read (packStorage).
func (g *GitSource) fetchRemote(ctx context.Context) (string, fs.FS, record.Errors, error) {
	auth, err := g.auth()
	if err != nil {
		return "", nil, nil, err
	}
	storage := newPackStorage()
	r, err := git.Init(storage, nil)
	if err != nil {
		return "", nil, nil, err
	}
	remote, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{g.cfg.Repo}})
	if err != nil {
		return "", nil, nil, err
	}
	ref, hash, err := g.listRevision(ctx, remote, auth)
	if err != nil {
		return "", nil, nil, err
	}
	g.mu.RLock()
	same := g.status.Head == hash.String() && g.snap != nil
	g.mu.RUnlock()
	if same {
		return hash.String(), nil, nil, nil
	}
	// By protocol v2 the fetch names the commit alone; by v0 the server
	// lists every ref again first.
	err = fetchV2(ctx, g.cfg.Repo, auth, hash, storage.PackfileWriter)
	if errors.Is(err, errNoV2) {
		err = r.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", Auth: auth, Depth: 1, Tags: git.NoTags,
			RefSpecs: []config.RefSpec{config.RefSpec("+" + ref.String() + ":refs/spokeforge/head")}})
	}
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return "", nil, nil, fmt.Errorf("fetching %s from %s: %w", ref, redactURL(g.cfg.Repo), err)
	}
	return g.commitFiles(r, hash)
}

// resolveRef finds the revision among the remote's refs: HEAD, a branch or a tag.
func resolveRef(refs []*plumbing.Reference, rev string) (plumbing.ReferenceName, plumbing.Hash, error) {
	byName := map[plumbing.ReferenceName]*plumbing.Reference{}
	for _, r := range refs {
		byName[r.Name()] = r
	}
	candidates := []plumbing.ReferenceName{plumbing.ReferenceName(rev), plumbing.NewBranchReferenceName(rev), plumbing.NewTagReferenceName(rev)}
	for _, name := range candidates {
		r, ok := byName[name]
		for i := 0; ok && r.Type() == plumbing.SymbolicReference && i < 5; i++ {
			name = r.Target()
			r, ok = byName[name]
		}
		if ok && r.Type() == plumbing.HashReference {
			return name, r.Hash(), nil
		}
	}
	return "", plumbing.ZeroHash, fmt.Errorf("revision %q not found (not HEAD, a branch or a tag)", rev)
}

// commitFiles lists the record files of commit h's tree (walkCommit): only
// the trees on the way to a record are read, every blob's size comes from
// its header, and a record blob is read only when the loader asks for it.
// A symlink is followed only to a regular file inside the record's own
// directory (Argo CD's out-of-bounds rule); a symlink where a record
// directory belongs, an oversized record or tree is refused as a finding.
func (g *GitSource) commitFiles(r *git.Repository, h plumbing.Hash) (string, fs.FS, record.Errors, error) {
	n, err := r.Storer.EncodedObjectSize(h)
	if err != nil {
		return "", nil, nil, fmt.Errorf("commit %s: %w", h, err)
	}
	if n > maxCommitBytes {
		return h.String(), repo.NewBlobFS(nil), record.Errors{{File: "commit " + h.String(),
			Msg: fmt.Sprintf("is %d bytes; at most %d are read", n, maxCommitBytes)}}, nil
	}
	c, err := object.GetCommit(r.Storer, h)
	if err != nil {
		return "", nil, nil, fmt.Errorf("commit %s: %w", h, err)
	}
	store, sizes, closePacks := packedObjects(r.Storer)
	defer closePacks()
	files, refused, err := walkCommit(store, sizes, c.TreeHash)
	if err != nil {
		return "", nil, nil, fmt.Errorf("commit %s: %w", h, err)
	}
	return h.String(), repo.NewBlobFS(files), refused, nil
}

// auth builds the transport credentials from their files.
func (g *GitSource) auth() (transport.AuthMethod, error) {
	switch {
	case isSSH(g.cfg.Repo):
		user := "git"
		if u, _, ok := strings.Cut(strings.TrimPrefix(g.cfg.Repo, "ssh://"), "@"); ok && !strings.Contains(u, "/") {
			user = u
		}
		keys, err := gitssh.NewPublicKeysFromFile(user, g.cfg.SSHKeyFile, "")
		if err != nil {
			return nil, fmt.Errorf("ssh key %s: %w", g.cfg.SSHKeyFile, err)
		}
		cb, err := knownhosts.New(g.cfg.KnownHostsFile)
		if err != nil {
			return nil, fmt.Errorf("known hosts %s: %w", g.cfg.KnownHostsFile, err)
		}
		keys.HostKeyCallback = cb
		return keys, nil
	case g.cfg.PasswordFile != "":
		pw, err := os.ReadFile(g.cfg.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("git password file: %w", err)
		}
		user := "git"
		if g.cfg.UsernameFile != "" {
			u, err := os.ReadFile(g.cfg.UsernameFile)
			if err != nil {
				return nil, fmt.Errorf("git username file: %w", err)
			}
			user = strings.TrimSpace(string(u))
		}
		return &githttp.BasicAuth{Username: user, Password: strings.TrimSpace(string(pw))}, nil
	}
	return nil, nil
}
