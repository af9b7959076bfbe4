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
	"slices"
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

// v2Client reaches git hosts as go-git does (the environment's proxy),
// on a transport of its own: http.DefaultTransport carries the render
// sandbox's guard, which refuses every request while a build runs.
// It follows a redirect only to the same scheme and host: the request
// carries the repo's basic-auth token, which a redirect elsewhere (or down
// to plain http) would hand to whoever the git server names.
var v2Client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true,
	TLSHandshakeTimeout: 10 * time.Second, IdleConnTimeout: 90 * time.Second, MaxIdleConns: 10},
	CheckRedirect: sameOriginRedirect}

func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	switch {
	case len(via) >= 10:
		return errors.New("stopped after 10 redirects")
	case req.URL.Scheme != first.Scheme || !strings.EqualFold(req.URL.Host, first.Host):
		return fmt.Errorf("the git server redirects to another host or scheme (%s://%s): not followed", req.URL.Scheme, req.URL.Host)
	}
	return nil
}

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
	rc, err := v2Command(ctx, url, auth, "ls-refs", req.Bytes())
	if err != nil {
		return nil, err
	}
	answer, err := readPkts(bufio.NewReader(io.LimitReader(rc, maxLsRefsBytes)))
	_ = rc.Close()
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

// readPkt reads one pkt-line into buf (nil: a new one): its payload, or a special packet
// (0 flush, 1 delimiter, 2 response end) with a nil payload.
func readPkt(r *bufio.Reader, buf []byte) ([]byte, int, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, 0, err
	}
	size, err := strconv.ParseUint(string(n[:]), 16, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("a malformed pkt-line length %q", n[:])
	}
	if size < 4 {
		return nil, int(size), nil
	}
	if buf == nil {
		buf = make([]byte, size-4)
	}
	if int(size-4) > len(buf) {
		return nil, 0, fmt.Errorf("a pkt-line of %d bytes", size)
	}
	b := buf[:size-4]
	_, err = io.ReadFull(r, b)
	return b, 0, err
}

// maxPkt is the largest pkt-line payload.
const maxPkt = 65516

// readPkts reads pkt-lines up to a flush; a delimiter or response end is an error here.
func readPkts(r *bufio.Reader) ([]string, error) {
	var out []string
	for {
		b, special, err := readPkt(r, nil)
		switch {
		case err != nil:
			return nil, err
		case b == nil && special == 0:
			return out, nil
		case b == nil:
			return nil, fmt.Errorf("an unexpected special pkt-line %04x", special)
		}
		out = append(out, strings.TrimSuffix(string(b), "\n"))
	}
}

// fetchV2 fetches commit h alone (depth 1) with protocol v2's fetch, which
// names no ref, and streams its pack into the writer open returns;
// errNoV2 (nothing written) when the remote does not speak v2.
func fetchV2(ctx context.Context, url string, auth transport.AuthMethod, h plumbing.Hash, open func() (io.WriteCloser, error)) error {
	var req bytes.Buffer
	pkt(&req, "command=fetch\n")
	req.WriteString("0001")
	for _, a := range []string{"ofs-delta", "no-progress", "deepen 1", "want " + h.String(), "done"} {
		pkt(&req, a+"\n")
	}
	req.WriteString("0000")
	rc, err := v2Command(ctx, url, auth, "fetch=shallow", req.Bytes())
	if err != nil {
		return err
	}
	defer rc.Close()
	r := bufio.NewReader(rc)
	buf := make([]byte, maxPkt)
	var w io.WriteCloser
	for {
		b, special, err := readPkt(r, buf)
		switch {
		case err != nil:
		case b == nil && special == 1: // the end of a section
			continue
		case b == nil && w != nil:
			return w.Close()
		case b == nil:
			err = errors.New("the answer ended before its pack")
		case bytes.HasPrefix(b, []byte("ERR ")):
			err = fmt.Errorf("the server: %.200s", b[4:])
		case w == nil && string(b) == "packfile\n":
			w, err = open()
		case w == nil: // shallow-info and its lines
			continue
		case len(b) > 0 && b[0] == 1:
			_, err = w.Write(b[1:])
		case len(b) > 0 && b[0] == 3:
			err = fmt.Errorf("the server: %.200s", b[1:])
		}
		if err != nil {
			if w != nil {
				_ = w.Close()
			}
			return err
		}
	}
}

// offers reads a capability advertisement: protocol v2 ("version 2"
// first) with command (its name, or name=feature: "fetch=shallow").
func offers(caps []string, command string) bool {
	if len(caps) == 0 || caps[0] != "version 2" {
		return false
	}
	name, feature, _ := strings.Cut(command, "=")
	for _, c := range caps[1:] {
		n, features, _ := strings.Cut(c, "=")
		if n == name && (feature == "" || slices.Contains(strings.Fields(features), feature)) {
			return true
		}
	}
	return false
}

// v2Command sends one protocol v2 command (body) and returns the answer's
// stream, over smart HTTP or to git-upload-pack for a file:// URL;
// errNoV2 when the remote does not speak v2 or offer command (offers).
func v2Command(ctx context.Context, url string, auth transport.AuthMethod, command string, body []byte) (io.ReadCloser, error) {
	switch {
	case strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://"):
		return v2HTTP(ctx, url, auth, command, body)
	case strings.HasPrefix(url, "file://"):
		return v2File(ctx, url, command, body)
	}
	return nil, errNoV2
}

func v2HTTP(ctx context.Context, url string, auth transport.AuthMethod, command string, body []byte) (io.ReadCloser, error) {
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
		resp, err := v2Client.Do(req)
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
	if err != nil || !offers(caps, command) {
		return nil, errNoV2
	}
	resp, err = do(http.MethodPost, url+"/git-upload-pack", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// v2File runs git-upload-pack on a file:// repository, as go-git's file
// transport does.
func v2File(ctx context.Context, url, command string, body []byte) (io.ReadCloser, error) {
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
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := &processReader{Reader: bufio.NewReader(out), cmd: cmd}
	caps, err := readPkts(done.Reader.(*bufio.Reader))
	if err != nil || !offers(caps, command) {
		_ = done.Close()
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("git-upload-pack %s: %w", ep.Path, err)
		}
		return nil, errNoV2
	}
	return done, nil
}

// processReader is a command's output; closing it ends the command.
type processReader struct {
	io.Reader
	cmd *exec.Cmd
}

func (p *processReader) Close() error {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	return nil
}
