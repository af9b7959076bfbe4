// Command runner is make bench's whole-process benchmark: it runs each contender (spokeforge
// render of the example GPU spoke, helm template and kustomize build of the same objects, a
// floor binary that only prints the same bytes, spokeforge version) round-robin for N
// rounds, and reports wall time (median, p10–p90, min–max) and peak RSS (rusage ru_maxrss
// from wait4) with ratios against spokeforge render.
//
// Before measuring it runs every contender once and checks that it prints the objects of the
// golden render (examples/gitops/rendered/gpu-east-1.spoke.yaml), compared as a multiset of
// objects: so the chart and the kustomize directory really render what spokeforge renders.
//
// Measurement runs in a fresh child process of this binary (-measure): Go starts children
// with vfork, and Linux folds the parent's peak RSS into the child's ru_maxrss at exec, so
// the measuring process must stay small; it reports its own peak RSS as the floor of what
// can be seen.
//
// Usage (from the repo root; test/bench/bench.sh builds the binaries):
//
//	runner -spokeforge BIN -helm BIN -kustomize BIN -floor BIN [-rounds 30]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

// Contender is one command to time.
type Contender struct {
	Name   string
	Args   []string
	Golden string // YAML stream whose objects the output must equal; "" = not checked
	Note   string
}

// Sample is one run.
// The contenders issue 16's ratios are taken from (report).
const (
	nameFloor            = "floor"
	nameKustomize        = "kustomize build"
	nameCmpOnly          = "spokeforge render, cmponly build"
	nameCmpOnlyNoOverlay = "spokeforge render, no overlay, cmponly build"
)

type Sample struct {
	Wall   time.Duration
	MaxRSS int64 // KiB
	// MinFlt counts the child's minor page faults (ru_minflt): what a process costs beyond
	// its CPU work depends on it, and on what a fault costs on the machine.
	MinFlt int64
}

type result struct {
	Samples map[string][]Sample
	SelfRSS int64 // KiB: peak RSS of the measuring process
}

func main() {
	var (
		sf       = flag.String("spokeforge", "", "spokeforge binary")
		helm     = flag.String("helm", "", "helm binary")
		kust     = flag.String("kustomize", "", "kustomize binary")
		floor    = flag.String("floor", "", "floor binary (prints the golden render)")
		rounds   = flag.Int("rounds", 30, "rounds; each runs every contender once")
		warmup   = flag.Int("warmup", 2, "rounds run first and discarded")
		measure  = flag.Bool("measure", false, "internal: measure the contenders given as JSON on stdin")
		jsonOut  = flag.String("json", "", "also write the raw samples here")
		onlyChk  = flag.Bool("check", false, "only check the contenders' output, measure nothing")
		spokeDir = flag.String("cluster", "examples/gitops/clusters/gpu-east-1", "the spoke's cluster folder")
		baseline = flag.String("baseline", "", "another spokeforge binary (e.g. built from main) to time beside this one")
		cmpOnly  = flag.String("cmponly", "", "spokeforge built with -tags cmponly (render, validate, names only)")
	)
	flag.Parse()
	if *measure {
		if err := measureChild(*rounds, *warmup); err != nil {
			fmt.Fprintln(os.Stderr, "runner -measure:", err)
			os.Exit(1)
		}
		return
	}
	for n, v := range map[string]string{"-spokeforge": *sf, "-helm": *helm, "-kustomize": *kust, "-floor": *floor} {
		if v == "" {
			fmt.Fprintf(os.Stderr, "runner: %s is required\n", n)
			os.Exit(2)
		}
	}
	golden := "examples/gitops/rendered/gpu-east-1.spoke.yaml"
	cs := []Contender{
		{Name: "spokeforge render", Args: []string{*sf, "render", *spokeDir}, Golden: golden, Note: "the CMP's generate command, kustomize overlay included"},
		{Name: "helm template", Args: []string{*helm, "template", "gpu-east-1", "test/bench/testdata/spoke-chart"}, Golden: golden, Note: "chart test/bench/testdata/spoke-chart"},
		{Name: nameKustomize, Args: []string{*kust, "build", "test/bench/testdata/spoke-kustomize"}, Golden: golden, Note: "the same objects as static files"},
		{Name: nameFloor, Args: []string{*floor}, Golden: golden, Note: "a Go binary that only prints the same bytes"},
		{Name: "spokeforge version", Args: []string{*sf, "version"}, Note: "process start-up of the spokeforge binary"},
		{Name: "spokeforge render, no overlay", Args: []string{*sf, "render", "examples/gitops/clusters/gpu-west-2"}, Golden: "examples/gitops/rendered/gpu-west-2.spoke.yaml", Note: "gpu-west-2 (no kustomization.yaml; other objects)"},
	}
	if *cmpOnly != "" {
		cs = append(cs,
			Contender{Name: nameCmpOnly, Args: []string{*cmpOnly, "render", *spokeDir}, Golden: golden, Note: "the same code built with -tags cmponly: no agent, check, credentials"},
			Contender{Name: "spokeforge version, cmponly build", Args: []string{*cmpOnly, "version"}, Note: "start-up of the cmponly build"},
			Contender{Name: nameCmpOnlyNoOverlay, Args: []string{*cmpOnly, "render", "examples/gitops/clusters/gpu-west-2"}, Golden: "examples/gitops/rendered/gpu-west-2.spoke.yaml", Note: "gpu-west-2 with the cmponly build (issue 16: at most 4× the floor)"})
	}
	if *baseline != "" {
		cs = append(cs,
			Contender{Name: "baseline: spokeforge render", Args: []string{*baseline, "render", *spokeDir}, Golden: golden, Note: "the -baseline binary"},
			Contender{Name: "baseline: spokeforge version", Args: []string{*baseline, "version"}, Note: "the -baseline binary"},
			Contender{Name: "baseline: spokeforge render, no overlay", Args: []string{*baseline, "render", "examples/gitops/clusters/gpu-west-2"}, Golden: "examples/gitops/rendered/gpu-west-2.spoke.yaml", Note: "the -baseline binary on gpu-west-2"})
	}
	if err := check(cs); err != nil {
		fmt.Fprintln(os.Stderr, "runner: check failed:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "[bench] check ok: helm, kustomize, floor and spokeforge print the same %s objects\n", golden)
	if *onlyChk {
		return
	}
	fmt.Fprintf(os.Stderr, "[bench] %d rounds (+%d warm-up) of %d contenders, round-robin\n", *rounds, *warmup, len(cs))
	res, err := runChild(cs, *rounds, *warmup)
	if err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(1)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", " ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "runner:", err)
			os.Exit(1)
		}
	}
	report(os.Stdout, cs, res, *rounds)
	breakdown(os.Stdout, cs)
}

// breakdown runs each contender once more with its stdout on a full pipe, so it blocks in
// its first write — after its work, as all of them print at the end — and reads its memory
// from /proc there: peak RSS, and the current resident anonymous memory (heap, stacks) and
// file pages (the mapped binary, which the page cache shares between runs and processes).
func breakdown(w io.Writer, cs []Contender) {
	fmt.Fprintln(w, "\nMemory at the first write of output (one run each), MiB:")
	fmt.Fprintln(w, "\n| contender | peak RSS (VmHWM) | anonymous (RssAnon) | file-backed (RssFile) | binary size |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, c := range cs {
		m, err := snapshot(c.Args)
		if err != nil {
			fmt.Fprintf(w, "| %s | %v | | | |\n", c.Name, err)
			continue
		}
		size := "?"
		if st, err := os.Stat(c.Args[0]); err == nil {
			size = fmt.Sprintf("%.1f", float64(st.Size())/(1<<20))
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %s |\n", c.Name, m["VmHWM"]/1024, m["RssAnon"]/1024, m["RssFile"]/1024, size)
	}
}

func snapshot(args []string) (map[string]float64, error) {
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fd := int(pw.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	fill := make([]byte, 4096)
	for {
		if _, err := syscall.Write(fd, fill); err != nil {
			break // EAGAIN: the pipe is full
		}
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		pw.Close()
		return nil, err
	}
	pw.Close()
	pid := cmd.Process.Pid
	var status map[string]float64
	deadline := time.Now().Add(20 * time.Second)
	for status == nil && time.Now().Before(deadline) {
		if blockedInWrite(pid) {
			status, err = procStatus(pid)
		}
		time.Sleep(time.Millisecond)
	}
	go io.Copy(io.Discard, r)
	werr := cmd.Wait()
	if status == nil {
		if err == nil {
			err = fmt.Errorf("never blocked writing stdout")
		}
		return nil, err
	}
	return status, werr
}

// blockedInWrite reports whether a thread of pid sits in write(1, ...).
func blockedInWrite(pid int) bool {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/syscall", pid, t.Name()))
		if err == nil && strings.HasPrefix(string(b), "1 0x1 ") {
			return true
		}
	}
	return false
}

func procStatus(pid int) (map[string]float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var kb float64
		if _, err := fmt.Sscanf(strings.TrimSpace(v), "%f kB", &kb); err == nil {
			m[k] = kb
		}
	}
	return m, nil
}

// check runs every contender once and compares its objects with its golden stream.
func check(cs []Contender) error {
	for _, c := range cs {
		out, err := exec.Command(c.Args[0], c.Args[1:]...).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			return fmt.Errorf("%s: %v\n%s", c.Name, err, stderr)
		}
		if c.Golden == "" {
			continue
		}
		want, err := os.ReadFile(c.Golden)
		if err != nil {
			return err
		}
		if err := sameObjects(want, out); err != nil {
			return fmt.Errorf("%s vs %s: %v", c.Name, c.Golden, err)
		}
	}
	return nil
}

// sameObjects compares two YAML streams as multisets of objects (order and formatting,
// comments and empty documents aside).
func sameObjects(want, got []byte) error {
	w, err := objects(want)
	if err != nil {
		return fmt.Errorf("golden: %w", err)
	}
	g, err := objects(got)
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if len(w) != len(g) {
		return fmt.Errorf("%d objects, want %d", len(g), len(w))
	}
	for i := range w {
		if w[i] != g[i] {
			return fmt.Errorf("objects differ:\n got %.300s\nwant %.300s", g[i], w[i])
		}
	}
	return nil
}

// objects returns the canonical JSON of each object of a YAML stream, sorted.
func objects(stream []byte) ([]string, error) {
	var out []string
	for i, d := range bytes.Split(append([]byte("\n"), stream...), []byte("\n---")) {
		var obj any
		if err := yaml.Unmarshal(d, &obj); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if obj == nil {
			continue
		}
		j, err := json.Marshal(obj) // map keys sorted: canonical
		if err != nil {
			return nil, err
		}
		out = append(out, string(j))
	}
	sort.Strings(out)
	return out, nil
}

// runChild measures in a fresh process of this binary, so that the runner's own memory
// (the checks above) does not show in the contenders' ru_maxrss.
func runChild(cs []Contender, rounds, warmup int) (*result, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	spec, err := json.Marshal(cs)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-measure", fmt.Sprint("-rounds=", rounds), fmt.Sprint("-warmup=", warmup))
	cmd.Stdin = bytes.NewReader(spec)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("measuring: %v", err)
	}
	var res result
	return &res, json.Unmarshal(out, &res)
}

// measureChild is the measuring process: it keeps no output of the contenders and little
// else, so its peak RSS stays near a bare Go program's.
func measureChild(rounds, warmup int) error {
	var cs []Contender
	if err := json.NewDecoder(os.Stdin).Decode(&cs); err != nil {
		return err
	}
	res := result{Samples: map[string][]Sample{}}
	for _, c := range cs {
		res.Samples[c.Name] = make([]Sample, 0, rounds)
	}
	buf := make([]byte, 32<<10)
	progress := time.Now()
	for r := -warmup; r < rounds; r++ {
		for i := range cs {
			c := cs[(i+max(r, 0))%len(cs)] // rotate the start: no contender always follows another
			s, err := runOnce(c.Args, buf)
			if err != nil {
				return fmt.Errorf("%s: %v", c.Name, err)
			}
			if r >= 0 {
				res.Samples[c.Name] = append(res.Samples[c.Name], s)
			}
		}
		if time.Since(progress) > 5*time.Second {
			fmt.Fprintf(os.Stderr, "[bench] round %d/%d\n", r+1, rounds)
			progress = time.Now()
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		res.SelfRSS = ru.Maxrss
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// runOnce starts args with stdout on a pipe it drains (as Argo CD reads a plugin's output),
// and returns the wall time from start to reaped exit and the child's ru_maxrss.
func runOnce(args []string, buf []byte) (Sample, error) {
	cmd := exec.Command(args[0], args[1:]...)
	pr, pw, err := os.Pipe()
	if err != nil {
		return Sample{}, err
	}
	cmd.Stdout = pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return Sample{}, err
	}
	pw.Close()
	for {
		if _, err := pr.Read(buf); err != nil {
			break
		}
	}
	pr.Close()
	err = cmd.Wait()
	wall := time.Since(start)
	if err != nil {
		return Sample{}, err
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil {
		return Sample{}, fmt.Errorf("no rusage")
	}
	return Sample{Wall: wall, MaxRSS: ru.Maxrss, MinFlt: ru.Minflt}, nil
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

type stats struct{ med, p10, p90, min, max, rssMed, rssMax, fltMed float64 }

func summarize(ss []Sample) stats {
	w := make([]float64, len(ss))
	r := make([]float64, len(ss))
	f := make([]float64, len(ss))
	for i, s := range ss {
		w[i] = float64(s.Wall) / float64(time.Millisecond)
		r[i] = float64(s.MaxRSS) / 1024
		f[i] = float64(s.MinFlt)
	}
	sort.Float64s(w)
	sort.Float64s(r)
	sort.Float64s(f)
	return stats{quantile(w, .5), quantile(w, .1), quantile(w, .9), w[0], w[len(w)-1], quantile(r, .5), r[len(r)-1], quantile(f, .5)}
}

func report(w io.Writer, cs []Contender, res *result, rounds int) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	base := summarize(res.Samples[cs[0].Name])
	fmt.Fprintf(bw, "Whole process, %d rounds round-robin; wall ms, peak RSS MiB; ratios = contender / %s (medians)\n\n", rounds, cs[0].Name)
	fmt.Fprintln(bw, "| contender | wall median | p10–p90 | min–max | peak RSS median (max) | minor faults median | wall ratio | RSS ratio |")
	fmt.Fprintln(bw, "|---|---:|---:|---:|---:|---:|---:|---:|")
	med := map[string]float64{}
	for _, c := range cs {
		s := summarize(res.Samples[c.Name])
		med[c.Name] = s.med
		fmt.Fprintf(bw, "| %s | %.1f | %.1f–%.1f | %.1f–%.1f | %.1f (%.1f) | %.0f | %.2f× | %.2f× |\n",
			c.Name, s.med, s.p10, s.p90, s.min, s.max, s.rssMed, s.rssMax, s.fltMed, s.med/base.med, s.rssMed/base.rssMed)
	}
	if noOverlay, ok := med[nameCmpOnlyNoOverlay]; ok {
		fmt.Fprintf(bw, "\nIssue 16 (medians): cmponly render without an overlay ÷ floor = %.2f× (target ≤ 4×); with the overlay ÷ kustomize build = %.2f× (target ≤ 0.5×)\n",
			noOverlay/med[nameFloor], med[nameCmpOnly]/med[nameKustomize])
	}
	fmt.Fprintf(bw, "\nPeak RSS of the measuring process (a lower bound on every RSS above, see runner doc): %.1f MiB\n", float64(res.SelfRSS)/1024)
	for _, c := range cs {
		fmt.Fprintf(bw, "- %s: `%s` — %s\n", c.Name, strings.Join(shortArgs(c.Args), " "), c.Note)
	}
}

// shortArgs names binaries by their base name in the report.
func shortArgs(args []string) []string {
	out := append([]string(nil), args...)
	if i := strings.LastIndexByte(out[0], '/'); i >= 0 {
		out[0] = out[0][i+1:]
	}
	return out
}
