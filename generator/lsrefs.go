package generator

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Looking up the tracked ref. Git's protocol v0/v1, all go-git v5 speaks,
// starts with the server listing every ref it has, so a look at the head
// costs every branch and tag of the repo. Protocol v2's ls-refs lists only
// the refs named by prefix: lsRefs asks for the revision's candidates
// alone, over smart HTTP and over file:// (git-upload-pack). A server
// that does not speak v2, and ssh (go-git cannot pass the protocol
// version), are listed in full by go-git.

// errNoV2: the server does not speak protocol v2.
var errNoV2 = errors.New("the server does not speak git protocol v2")

// maxLsRefsBytes bounds one ls-refs answer: a handful of refs.
const maxLsRefsBytes = 1 << 20

// lsRefsClient reaches git hosts as go-git does (the environment's proxy),
// on a transport of its own: http.DefaultTransport carries the render
// sandbox's guard, which refuses every request while a build runs.
var lsRefsClient = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true,
	TLSHandshakeTimeout: 10 * time.Second, IdleConnTimeout: 90 * time.Second, MaxIdleConns: 10}}

// refCandidates are the ref names a revision may be, first match wins (resolveRef).
func refCandidates(rev string) []plumbing.ReferenceName {
	return []plumbing.ReferenceName{plumbing.ReferenceName(rev), plumbing.NewBranchReferenceName(rev), plumbing.NewTagReferenceName(rev)}
}

// lsRefs lists the refs rev may name on the remote with ls-refs (a
// symbolic ref and its target); errNoV2 when it cannot.
func lsRefs(ctx context.Context, url string, auth transport.AuthMethod, rev string) ([]*plumbing.Reference, error) {
	var req bytes.Buffer
	pkt(&req, "command=ls-refs\n")
	req.WriteString("0001")
	pkt(&req, "symrefs\n")
	for _, c := range refCandidates(rev) {
		pkt(&req, "ref-prefix "+c.String()+"\n")
	}
	req.WriteString("0000")
	var answer []string
	var err error
	switch {
	case strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://"):
		answer, err = lsRefsHTTP(ctx, url, auth, req.Bytes())
	case strings.HasPrefix(url, "file://"):
		answer, err = lsRefsFile(ctx, url, req.Bytes())
	default:
		return nil, errNoV2
	}
	if err != nil {
		return nil, err
	}
	var refs []*plumbing.Reference
	for _, line := range answer {
		f := strings.Fields(line)
		if len(f) < 2 || !plumbing.IsHash(f[0]) {
			return nil, fmt.Errorf("an ls-refs line that is not a ref: %.80q", line)
		}
		name := plumbing.ReferenceName(f[1])
		refs = append(refs, plumbing.NewHashReference(name, plumbing.NewHash(f[0])))
		for _, a := range f[2:] {
			if t, ok := strings.CutPrefix(a, "symref-target:"); ok {
				// resolveRef follows it to the branch, whose hash is this one.
				refs[len(refs)-1] = plumbing.NewSymbolicReference(name, plumbing.ReferenceName(t))
				refs = append(refs, plumbing.NewHashReference(plumbing.ReferenceName(t), plumbing.NewHash(f[0])))
			}
		}
	}
	return refs, nil
}

// pkt writes s as one pkt-line.
func pkt(w *bytes.Buffer, s string) { fmt.Fprintf(w, "%04x%s", len(s)+4, s) }

// readPkts reads pkt-lines up to a flush; a delimiter or response end is an error here.
func readPkts(r *bufio.Reader) ([]string, error) {
	var out []string
	for {
		var n [4]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return nil, err
		}
		size, err := strconv.ParseUint(string(n[:]), 16, 16)
		if err != nil {
			return nil, fmt.Errorf("a malformed pkt-line length %q", n[:])
		}
		switch {
		case size == 0:
			return out, nil
		case size < 4:
			return nil, fmt.Errorf("an unexpected special pkt-line %04x", size)
		}
		b := make([]byte, size-4)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		out = append(out, strings.TrimSuffix(string(b), "\n"))
	}
}

// isV2 reads a capability advertisement: "version 2" first, or another protocol.
func isV2(lines []string) bool { return len(lines) > 0 && lines[0] == "version 2" }

func lsRefsHTTP(ctx context.Context, url string, auth transport.AuthMethod, body []byte) ([]string, error) {
	url = strings.TrimSuffix(url, "/")
	do := func(method, u string, body io.Reader) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, method, u, body)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Git-Protocol", "version=2")
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-git-upload-pack-request")
			req.Header.Set("Accept", "application/x-git-upload-pack-result")
		}
		if a, ok := auth.(*githttp.BasicAuth); ok && a != nil {
			req.SetBasicAuth(a.Username, a.Password)
		}
		resp, err := lsRefsClient.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			_ = resp.Body.Close()
			return nil, fmt.Errorf("%s %s: %s", method, redactURL(u), resp.Status)
		}
		return resp, nil
	}
	resp, err := do(http.MethodGet, url+"/info/refs?service=git-upload-pack", nil)
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(io.LimitReader(resp.Body, maxLsRefsBytes))
	caps, err := readPkts(r)
	if err == nil && len(caps) == 1 && strings.HasPrefix(caps[0], "# service=") {
		caps, err = readPkts(r) // some servers announce the service first
	}
	// A v0 server sent every ref: not read, go-git lists them.
	_ = resp.Body.Close()
	if err != nil || !isV2(caps) {
		return nil, errNoV2
	}
	resp, err = do(http.MethodPost, url+"/git-upload-pack", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readPkts(bufio.NewReader(io.LimitReader(resp.Body, maxLsRefsBytes)))
}

// lsRefsFile runs git-upload-pack on a file:// repository, as go-git's
// file transport does.
func lsRefsFile(ctx context.Context, url string, body []byte) ([]string, error) {
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("git-upload-pack")
	if err != nil {
		return nil, errNoV2
	}
	cmd := exec.CommandContext(ctx, bin, ep.Path)
	cmd.Env = append(os.Environ(), "GIT_PROTOCOL=version=2")
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := bufio.NewReader(io.LimitReader(out, maxLsRefsBytes))
	caps, err := readPkts(r)
	var refs []string
	if err == nil && isV2(caps) {
		refs, err = readPkts(r)
	} else if err == nil {
		err = errNoV2
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err != nil && !errors.Is(err, errNoV2) {
		return nil, fmt.Errorf("git-upload-pack %s: %w %s", ep.Path, err, strings.TrimSpace(stderr.String()))
	}
	return refs, err
}
