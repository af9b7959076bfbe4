package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// Bounds of one render's output, spoke or hub, overlay or not. Render and
// validate both go through CheckOutput (cmp's renderCluster), so validate
// refuses exactly what render refuses.
const (
	// MaxOutputBytes: Argo CD caps a directory app's manifests at 10 MB; a
	// spoke renders about 35 KB.
	MaxOutputBytes = 10 << 20
	// MaxOutputObjects: a spoke renders about 30 objects; kustomize's time
	// grows with the square of the objects it builds (2,000 took 20 s of
	// the 30 s render timeout, 1,000 about 5 s).
	MaxOutputObjects = 1000
)

// Bounds of what kustomize may be asked to build, checked on the decoded
// kustomizations before it runs: kustomize builds in memory, so a bound
// checked only on its result would come after the memory was spent.
const (
	// maxBuildBytes bounds the estimated size of what a build makes: an
	// upper bound of every object's size after every generator, patch,
	// transformer and replacement (estimate), not the size itself.
	maxBuildBytes = 128 << 20
	// maxBuildEntries bounds the list entries of all the kustomizations a
	// build reads, each inclusion counted: resources, components, generator
	// file, env and literal references, patches, replacement field paths.
	maxBuildEntries = 10_000
	// maxBuildKustomizations bounds how often kustomizations are built (a
	// directory listed twice is built twice; nesting multiplies).
	maxBuildKustomizations = 200
)

// OutputError is a render over a bound of its output.
type OutputError struct{ File, Msg string }

func (e *OutputError) Error() string { return e.File + ": " + e.Msg }

// CheckOutput refuses a rendered stream over MaxOutputBytes or
// MaxOutputObjects; file names what made it (the record or the overlay).
func CheckOutput(file string, out []byte, objects int) error {
	if len(out) > MaxOutputBytes {
		return &OutputError{File: file, Msg: fmt.Sprintf("the rendered output is %d bytes; at most %d are rendered (MaxOutputBytes)", len(out), MaxOutputBytes)}
	}
	return checkObjects(file, objects)
}

func checkObjects(file string, n int) error {
	if n > MaxOutputObjects {
		return &OutputError{File: file, Msg: fmt.Sprintf("the rendered output has %d objects; at most %d are rendered (MaxOutputObjects)", n, MaxOutputObjects)}
	}
	return nil
}

// skipBuildEstimate turns the pre-build estimate off, so tests can show the
// bound on the built output holds on its own. Never set outside tests.
var skipBuildEstimate bool

// buildSize is an upper bound of what building a kustomization makes.
type buildSize struct {
	objects int64
	bytes   int64
	maxDoc  int64 // the largest object
}

func (s *buildSize) add(o buildSize) {
	s.objects = satAdd(s.objects, o.objects)
	s.bytes = satAdd(s.bytes, o.bytes)
	s.maxDoc = max(s.maxDoc, o.maxDoc)
}

// grow adds at most per bytes to each of the objects.
func (s *buildSize) grow(per int64) {
	s.bytes = satAdd(s.bytes, satMul(per, s.objects))
	s.maxDoc = satAdd(s.maxDoc, per)
}

// satMul multiplies sizes, saturating at growthCap as satAdd does.
func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a >= growthCap/b {
		return growthCap
	}
	return a * b
}

// buildEstimate bounds what kustomize would make of the root kustomization
// (checked: every path in it is a file or kustomization directory of the
// overlay) and the rendered base of baseObjects objects, baseBytes bytes,
// and refuses it over the build bounds, naming the kustomization and the
// bound. Every step only adds to the bound: resources and generators their
// files' sizes, a patch or transformer field its own size to each object it
// may touch (all of them), a JSON patch copy doubles its targets, a
// replacement copies the largest object into each field path of each
// object.
type buildEstimate struct {
	c       *overlayChecker
	entries int
	builds  int
}

func (c *overlayChecker) estimateBuild(baseObjects int, baseBytes, baseMaxDoc int64) error {
	if skipBuildEstimate {
		return nil
	}
	e := &buildEstimate{c: c}
	s := buildSize{objects: int64(baseObjects), bytes: baseBytes, maxDoc: baseMaxDoc}
	if err := e.kustomization(c.root, &s); err != nil {
		return err
	}
	switch {
	case s.objects > MaxOutputObjects:
		return c.fail(c.root, 0, "the overlay may make up to %d objects (resources, generators and included directories, each inclusion counted); at most %d are rendered (MaxOutputObjects)", s.objects, MaxOutputObjects)
	case s.bytes > maxBuildBytes:
		return c.fail(c.root, 0, "the overlay may make up to %d bytes (files listed by generators and resources, patches and replacements applied to every object they may match); at most %d are built: list each file once, narrow what patches and replacements copy", s.bytes, maxBuildBytes)
	}
	return nil
}

func (e *buildEstimate) entry(file string, n int) error {
	if e.entries += n; e.entries > maxBuildEntries {
		return e.c.fail(file, 0, "the overlay's kustomizations list more than %d entries (resources, components, generator files and literals, patches, replacement field paths; each inclusion counted)", maxBuildEntries)
	}
	return nil
}

// kustomization adds what building name makes to s, which holds what is
// built around it so far (a component's patches apply to it).
func (e *buildEstimate) kustomization(name string, s *buildSize) error {
	c := e.c
	if e.builds++; e.builds > maxBuildKustomizations {
		return c.fail(name, 0, "the overlay builds kustomizations more than %d times (directories and components listed more than once, or nested)", maxBuildKustomizations)
	}
	k, ok := c.kusts[name]
	if !ok {
		// Not in the directory: the check refused it already (paths), and
		// the sandbox refuses what it would fetch.
		return nil
	}
	dir := path.Dir(name)
	if err := e.entry(name, len(k.Resources)+len(k.Components)); err != nil {
		return err
	}
	for _, p := range k.Resources {
		full := path.Join(dir, p)
		if b, ok := c.files[full]; ok {
			s.add(fileSize(b))
			continue
		}
		sub := buildSize{}
		if err := e.kustomization(c.kustomizationIn(full), &sub); err != nil {
			return err
		}
		s.add(sub)
	}
	for _, g := range k.ConfigMapGenerator {
		refs := len(g.FileSources) + len(g.LiteralSources) + len(g.EnvSources)
		if err := e.entry(name, refs); err != nil {
			return err
		}
		// Per entry: its key, quoting and indentation.
		gen := satAdd(1024, satMul(int64(refs), 256))
		for _, l := range g.LiteralSources {
			gen = satAdd(gen, int64(len(l)))
		}
		for _, p := range append(append([]string{}, g.FileSources...), g.EnvSources...) {
			if _, after, ok := strings.Cut(p, "="); ok {
				p = after
			}
			gen = satAdd(gen, satMul(2, int64(len(c.files[path.Join(dir, p)])))) // base64 of binary data
		}
		if g.EnvSource != "" {
			gen = satAdd(gen, int64(len(c.files[path.Join(dir, g.EnvSource)])))
		}
		s.add(buildSize{objects: 1, bytes: gen, maxDoc: gen})
	}
	for _, p := range k.Components {
		if err := e.kustomization(c.kustomizationIn(path.Join(dir, p)), s); err != nil {
			return err
		}
	}
	// The fields that transform every object (labels, annotations, images,
	// replicas, names) add at most their own text to each, labels four
	// times (metadata, selectors, templates).
	fields, err := json.Marshal([]any{k.CommonLabels, k.Labels, k.CommonAnnotations, k.Images, k.Replicas, k.NamePrefix, k.NameSuffix, k.Namespace})
	if err != nil {
		return err
	}
	s.grow(satMul(4, int64(len(fields))))
	// A var's value may replace each $(VAR) of an object: at most one per
	// four bytes of it.
	for range k.Vars {
		s.grow(satMul(max(1, s.maxDoc/4), s.maxDoc))
	}
	patches := len(k.PatchesStrategicMerge) + len(k.Patches) + len(k.PatchesJson6902)
	if err := e.entry(name, patches); err != nil {
		return err
	}
	for _, p := range k.PatchesStrategicMerge {
		s.grow(e.patchText(dir, string(p)))
	}
	for _, p := range append(append([]types.Patch{}, k.Patches...), k.PatchesJson6902...) {
		text := p.Patch
		if p.Path != "" {
			text += string(c.files[path.Join(dir, p.Path)])
		}
		// A JSON patch copy op may copy a whole object into itself.
		for n := strings.Count(strings.ToLower(text), "copy"); n > 0 && s.maxDoc < maxBuildBytes; n-- {
			s.bytes, s.maxDoc = satMul(2, s.bytes), satMul(2, s.maxDoc)
		}
		s.grow(int64(len(text)))
	}
	return e.replacements(name, dir, k, s)
}

// replacements: each field path of each target may receive the largest
// object in every object; a wildcard in a path may match every element of
// a list, at most one per four bytes of the object.
func (e *buildEstimate) replacements(name, dir string, k *types.Kustomization, s *buildSize) error {
	var rs []types.Replacement
	for _, r := range k.Replacements {
		if r.Path == "" {
			rs = append(rs, r.Replacement)
			continue
		}
		var fromFile []types.Replacement
		if err := yaml.Unmarshal(e.c.files[path.Join(dir, r.Path)], &fromFile); err != nil {
			return e.c.fail(name, e.c.valueLine(name, r.Path), "replacements.path: %q is not a list of replacements: %v", r.Path, err)
		}
		rs = append(rs, fromFile...)
	}
	for _, r := range rs {
		var matches int64
		for _, t := range r.Targets {
			if t == nil {
				continue
			}
			if err := e.entry(name, max(1, len(t.FieldPaths))); err != nil {
				return err
			}
			for _, fp := range t.FieldPaths {
				m := int64(1)
				for i := strings.Count(fp, "*"); i > 0; i-- {
					m = satMul(m, max(1, s.maxDoc/4))
				}
				matches = satAdd(matches, m)
			}
		}
		s.grow(satMul(matches, s.maxDoc))
	}
	return nil
}

// patchText is the size of a strategic merge patch, inline or a file.
func (e *buildEstimate) patchText(dir, p string) int64 {
	if b, ok := e.c.files[path.Join(dir, p)]; ok && !strings.Contains(p, "\n") {
		return int64(len(b))
	}
	return int64(len(p))
}

// kustomizationIn is the kustomization file of directory dir.
func (c *overlayChecker) kustomizationIn(dir string) string {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if _, ok := c.kusts[path.Join(dir, n)]; ok {
			return path.Join(dir, n)
		}
	}
	return path.Join(dir, konfig.DefaultKustomizationFileName())
}

// fileSize bounds the objects of a resource file: its documents, or for a
// List one per item (at most one per 16 bytes).
func fileSize(b []byte) buildSize {
	n := int64(bytes.Count(b, []byte("\n---"))) + 1
	if bytes.Contains(b, []byte("items")) {
		n = max(n, int64(len(b))/16)
	}
	return buildSize{objects: n, bytes: int64(len(b)), maxDoc: int64(len(b))}
}
