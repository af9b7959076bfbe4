//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one child process of the harness: it runs in its own process group, with its
// stdout and stderr in LogPath.
type Process struct {
	Name    string
	LogPath string

	spec    procSpec
	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	waitErr error
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after grace.
func (p *Process) stop(grace time.Duration) {
	if p.cmd.Process == nil {
		return
	}
	pgid := p.cmd.Process.Pid
	if exited, _ := p.Exited(); !exited {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
		}
	}
	// Children of the leader (git, plugins) may still be alive in the group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
}

// registry holds every running process of every hub, so that TestMain can kill them on a signal.
var registry = struct {
	sync.Mutex
	procs map[*Process]struct{}
	dirs  map[string]struct{}
}{procs: map[*Process]struct{}{}, dirs: map[string]struct{}{}}

// KillAll ends every process started by any Hub and removes the work folders that are not
// kept. TestMain calls it on SIGINT/SIGTERM and after the tests.
func KillAll() {
	registry.Lock()
	procs := make([]*Process, 0, len(registry.procs))
	for p := range registry.procs {
		procs = append(procs, p)
	}
	registry.procs = map[*Process]struct{}{}
	dirs := registry.dirs
	registry.dirs = map[string]struct{}{}
	registry.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func(p *Process) { defer wg.Done(); p.stop(3 * time.Second) }(p)
	}
	wg.Wait()
	for d := range dirs {
		_ = os.RemoveAll(d)
	}
}

// procSpec describes a process to start.
type procSpec struct {
	name string   // component name, also the log file's name
	path string   // executable
	args []string // arguments
	env  []string // extra environment (KEY=VALUE), added to the test's environment
	dir  string   // working directory (optional)
}

// start launches spec in its own process group with Pdeathsig, logging to logDir/<name>.log.
func start(logDir string, spec procSpec) (*Process, error) {
	logPath := filepath.Join(logDir, spec.name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "# %s %s\n# env: %s\n", spec.path, strings.Join(spec.args, " "), strings.Join(spec.env, " "))
	cmd := exec.Command(spec.path, spec.args...)
	cmd.Env = append(os.Environ(), spec.env...)
	cmd.Dir = spec.dir
	cmd.Stdout = f
	cmd.Stderr = f
	// Own process group: killed as a group, and a Ctrl-C at the terminal reaches only the test
	// binary, whose signal handler ends the group. Pdeathsig: the kernel kills the child if the
	// test binary dies without cleaning up (go test -timeout panics, SIGKILL).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", spec.name, spec.path, err)
	}
	p := &Process{Name: spec.name, LogPath: logPath, spec: spec, cmd: cmd, logFile: f, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		if p.waitErr == nil {
			p.waitErr = errors.New("exited with status 0")
		}
		f.Close()
		close(p.done)
	}()
	registry.Lock()
	registry.procs[p] = struct{}{}
	registry.Unlock()
	return p, nil
}

// waitFor polls check every interval until it returns nil, the deadline passes, or p exits.
// The error names the component and its log file.
func waitFor(ctx context.Context, p *Process, what string, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	started := time.Now()
	var last error
	for {
		if p != nil {
			if exited, err := p.Exited(); exited {
				return fmt.Errorf("%s exited while waiting for %s: %v; log: %s\n%s", p.Name, what, err, p.LogPath, tail(p.LogPath, 30))
			}
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if p != nil {
				return fmt.Errorf("%s: %s not reached within %s (last error: %v); log: %s\n%s", p.Name, what, time.Since(started).Round(time.Second), last, p.LogPath, tail(p.LogPath, 30))
			}
			return fmt.Errorf("%s not reached within %s (last error: %v)", what, time.Since(started).Round(time.Second), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    | " + strings.Join(lines, "\n    | ")
}

// tcpCheck succeeds when addr accepts TCP connections.
func tcpCheck(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// portPool hands out free loopback ports. It keeps every port listened to until release, so
// that two calls never return the same port; release closes them right before the processes
// start. Ports come from below the kernel's ephemeral range (32768 and up on Linux), so no
// outgoing connection takes one between release and the process binding it, and never twice
// in a test process, so hubs started in parallel tests do not race for one. Test processes
// running at the same time (test/e2e/run.sh runs one per Argo CD release) each get their own
// part of the range through E2E_PORT_RANGE, since neither can see which ports the other has
// released but not yet bound.
type portPool struct {
	ls []net.Listener
}

var portLow, portHigh = portRange(os.Getenv("E2E_PORT_RANGE"))

// portRange parses "LOW-HIGH" (HIGH excluded), falling back to the whole range below the
// ephemeral ports.
func portRange(s string) (int, int) {
	const low, high = 20000, 32768
	var lo, hi int
	if _, err := fmt.Sscanf(s, "%d-%d", &lo, &hi); err != nil || lo < 1024 || hi <= lo+64 || hi > 65536 {
		return low, high
	}
	return lo, hi
}

var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

func (pp *portPool) get() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 200 {
		port := portLow + rand.IntN(portHigh-portLow)
		if handedOut.ports[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		handedOut.ports[port] = true
		pp.ls = append(pp.ls, l)
		return port, nil
	}
	return 0, fmt.Errorf("no free loopback port in %d-%d", portLow, portHigh-1)
}

func (pp *portPool) release() {
	for _, l := range pp.ls {
		l.Close()
	}
	pp.ls = nil
}

// freeAddr returns a free loopback address from the pool, for a process a test starts.
func freeAddr() (string, error) {
	var pp portPool
	defer pp.release()
	port, err := pp.get()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}

// checkPortFree fails when something already listens on 127.0.0.1:port.
func checkPortFree(name string, port int) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fmt.Errorf("port %d for %s is not free: %w", port, name, err)
	}
	return l.Close()
}

// logSummary lists the log files of dir with the tail of each, for a failing test.
func logSummary(dir string, n int) string {
	entries, _ := os.ReadDir(dir)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		// Only the processes' logs: the folder also holds the browser's screenshot.
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".log") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", filepath.Join(dir, name), n, tail(filepath.Join(dir, name), n))
	}
	return b.String()
}

// hubPorts hands out one port per name, each checked free after the pool lets go of them. A
// port something else bound in between (seen in CI: a port below the ephemeral range that no
// process of this suite was given) is not handed out again; the hub draws a new set, up to three
// times, and notes in logDir/ports.log what held the port, as far as /proc tells.
func hubPorts(names []string, logDir string) ([]int, error) {
	var lastErr error
	for range 3 {
		var pp portPool
		ports := make([]int, len(names))
		for i := range ports {
			p, err := pp.get()
			if err != nil {
				pp.release()
				return nil, err
			}
			ports[i] = p
		}
		pp.release()
		lastErr = nil
		for i, p := range ports {
			if err := checkPortFree(names[i], p); err != nil {
				lastErr = fmt.Errorf("%w (held by %s)", err, portHolder(p))
				msg := lastErr.Error() + "; drawing new ports\n"
				appendLog(filepath.Join(logDir, "ports.log"), msg)
				fmt.Fprint(os.Stderr, "e2e: "+msg)
				break
			}
		}
		if lastErr == nil {
			return ports, nil
		}
	}
	return nil, lastErr
}

// portHolder names the processes with a socket bound to 127.0.0.1:port or 0.0.0.0:port, read
// from /proc (Linux); "unknown" when it cannot tell.
func portHolder(port int) string {
	inodes := map[string]string{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 {
				continue
			}
			local := fields[1]
			if i := strings.LastIndexByte(local, ':'); i < 0 || !strings.EqualFold(local[i+1:], fmt.Sprintf("%04X", port)) {
				continue
			}
			inodes["socket:["+fields[9]+"]"] = "state " + fields[3]
		}
	}
	if len(inodes) == 0 {
		return "unknown (no socket in /proc/net/tcp)"
	}
	var found []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name()))
			if state, ok := inodes[target]; err == nil && ok {
				cmd, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
				found = append(found, fmt.Sprintf("pid %s %q, %s", p.Name(), strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " "), state))
				break
			}
		}
	}
	if len(found) == 0 {
		return "a socket no visible process owns (" + fmt.Sprint(len(inodes)) + " in /proc/net/tcp)"
	}
	return strings.Join(found, "; ")
}

// appendLog adds line to the file at path, best effort.
func appendLog(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(line)
}
