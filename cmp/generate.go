package cmp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spokeforge/spokeforge/cmp/render"
	"github.com/spokeforge/spokeforge/internal/record"
	"github.com/spokeforge/spokeforge/internal/repo"
	"github.com/spokeforge/spokeforge/internal/secretfile"
	"github.com/spokeforge/spokeforge/internal/validate"
)

// Version is the spokeforge version `spokeforge version` prints; the binary
// sets it at build time (-ldflags -X .../cmp.Version=...).
var Version = "v0.1.0-dev"

// Validate reads every record of the repo checked out at root, checks each
// and the rules across them, checks each cluster's SOPS secret files against
// its spec.secrets (present, encrypted, the listed keys, none without an
// entry), and renders every cluster whose record holds in spoke and hub mode
// through Generate's own code, so validate accepts a record (and its
// overlay) exactly when the CMP renders it.
// Each render is bounded by RenderTimeout, as the CMP's is, and the run
// stops starting renders once it has taken ValidateTimeout.
func Validate(root string) (*repo.Repo, record.Errors) {
	return ValidateWithin(root, ValidateTimeout)
}

// ValidateWithin is Validate with the whole run bounded by total: past it,
// the clusters not yet rendered are findings.
func ValidateWithin(root string, total time.Duration) (*repo.Repo, record.Errors) {
	deadline := time.Now().Add(total)
	r, errs := repo.Load(root)
	errs = append(errs, renderFindings(root, r, errs, deadline, total)...)
	errs = append(errs, secretfile.CheckRepo(root, r.Clusters)...)
	return r, errs
}

// validateRepoURL and validateImage stand in for the repoURL Argo CD would
// pass a hub render and the agent image the install sets.
const (
	validateRepoURL = "https://gitops.invalid/repo.git"
	validateImage   = "spokeforge.invalid/spokeforge:validate"
)

// renderFindings renders every cluster whose record has no finding, in
// spoke and hub mode, exactly as the CMP would: validate accepts a record
// (and its overlay) only when render does.
func renderFindings(root string, r *repo.Repo, known record.Errors, deadline time.Time, total time.Duration) record.Errors {
	bad := map[string]bool{}
	for _, e := range known {
		bad[e.File] = true
	}
	var out record.Errors
	for i, c := range r.Clusters {
		if bad[c.File] {
			continue
		}
		if time.Now().After(deadline) {
			out = append(out, record.Error{File: c.File, Msg: fmt.Sprintf("not rendered: validate stopped after %s (--timeout) with %d cluster(s) left", total, len(r.Clusters)-i)})
			break
		}
		rel := path.Dir(c.File)
		env := func(k string) string {
			switch k {
			case "ARGOCD_APP_SOURCE_REPO_URL":
				return validateRepoURL
			case "ARGOCD_APP_SOURCE_PATH":
				return rel
			case "SPOKEFORGE_IMAGE":
				return validateImage
			}
			return ""
		}
		for _, mode := range []string{ModeSpoke, ModeHub} {
			_, err := Within(RenderTimeout, "the render (mode "+mode+")", func() ([]byte, error) {
				return renderDir(filepath.Join(root, filepath.FromSlash(rel)), rel, mode, env)
			})
			var te *TimeoutError
			if errors.As(err, &te) {
				// The CMP stops such a render too; this one runs on in the background.
				out = append(out, record.Error{File: c.File, Msg: err.Error() + " (the CMP's render timeout)"})
				break
			}
			if err != nil {
				out = append(out, asFindings(rel, err)...)
				break
			}
		}
	}
	return out
}

// asFindings turns a render error into findings.
func asFindings(display string, err error) record.Errors {
	var errs record.Errors
	if errors.As(err, &errs) {
		return errs
	}
	var oe *render.OverlayError
	if errors.As(err, &oe) {
		return record.Errors{{File: oe.File, Line: oe.Line, Msg: oe.Msg}}
	}
	var be *render.OutputError
	if errors.As(err, &be) {
		return record.Errors{{File: be.File, Msg: be.Msg}}
	}
	return record.Errors{{File: display, Msg: err.Error()}}
}

// Env reads a variable of Argo CD's build environment (os.Getenv in the sidecar).
type Env func(string) string

// params decodes ARGOCD_APP_PARAMETERS ([{"name":..,"string":..}]).
func params(getenv Env) (map[string]string, error) {
	out := map[string]string{}
	raw := getenv("ARGOCD_APP_PARAMETERS")
	if strings.TrimSpace(raw) == "" {
		return out, nil
	}
	var list []struct {
		Name   string `json:"name"`
		String string `json:"string"`
	}
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return nil, fmt.Errorf("ARGOCD_APP_PARAMETERS is not Argo CD's parameter JSON: %v", err)
	}
	for _, p := range list {
		if _, _, bad := record.ControlChar(p.Name + p.String); bad {
			return nil, fmt.Errorf("plugin parameter %q holds a control or invisible character", record.Redact(strings.ToValidUTF8(p.Name, "?")))
		}
		out[p.Name] = p.String
	}
	return out, nil
}

// Render modes.
const (
	ModeSpoke    = "spoke"
	ModeHub      = "hub"
	ModeProjects = "projects"
)

// Generate is the CMP's generate step: the manifests for the cluster
// directory dir in mode ("" takes the plugin parameter, else spoke), from
// Argo CD's build environment. It never returns an empty stream without an
// error; errors name the file and field.
func Generate(dir, mode string, getenv Env) ([]byte, error) {
	mode, opts, err := renderOptions(mode, getenv)
	if err != nil {
		return nil, err
	}
	displayDir := dir
	if dir == "." && opts.SourcePath != "" {
		displayDir = opts.SourcePath
	}
	return render1(dir, displayDir, mode, opts)
}

// renderOptions reads the mode and options from flags and Argo CD's build environment.
func renderOptions(mode string, getenv Env) (string, render.Options, error) {
	ps, err := params(getenv)
	if err != nil {
		return "", render.Options{}, err
	}
	if mode == "" {
		mode = ps["mode"]
	}
	if mode == "" {
		mode = getenv("ARGOCD_ENV_SPOKEFORGE_MODE")
	}
	if mode == "" {
		mode = ModeSpoke
	}
	eso, err := render.ESOVersionFor(getenv("KUBE_API_VERSIONS"))
	if err != nil && mode != ModeProjects {
		return "", render.Options{}, err
	}
	for _, k := range []string{"SPOKEFORGE_IMAGE", "ARGOCD_ENV_SPOKEFORGE_IMAGE", "ARGOCD_ENV_ARGOCD_NAMESPACE", "ARGOCD_ENV_HUB_SECRET_STORE", "ARGOCD_ENV_SPOKEFORGE_MODE", "ARGOCD_ENV_INVENTORY_NAMESPACE", "SPOKEFORGE_INVENTORY_NAMESPACE",
		"ARGOCD_APP_SOURCE_REPO_URL", "ARGOCD_APP_SOURCE_TARGET_REVISION", "ARGOCD_APP_SOURCE_PATH"} {
		if _, _, bad := record.ControlChar(getenv(k)); bad {
			return "", render.Options{}, fmt.Errorf("%s holds a control or invisible character", k)
		}
	}
	image := ""
	if mode == ModeSpoke {
		if image, err = agentImage(ps, getenv); err != nil {
			return "", render.Options{}, err
		}
	}
	opts := render.Options{
		Image:          image,
		ESOVersion:     eso,
		ArgoNamespace:  firstNonEmpty(getenv("ARGOCD_ENV_ARGOCD_NAMESPACE"), "argocd"),
		HubSecretStore: firstNonEmpty(ps["hubSecretStore"], getenv("ARGOCD_ENV_HUB_SECRET_STORE"), "spokeforge-hub"),
		RepoURL:        getenv("ARGOCD_APP_SOURCE_REPO_URL"),
		TargetRevision: firstNonEmpty(getenv("ARGOCD_APP_SOURCE_TARGET_REVISION"), "HEAD"),
		SourcePath:     getenv("ARGOCD_APP_SOURCE_PATH"),
	}
	if mode == ModeHub && render.ServesClusterProfile(getenv("KUBE_API_VERSIONS")) {
		ns := firstNonEmpty(getenv("ARGOCD_ENV_INVENTORY_NAMESPACE"), getenv("SPOKEFORGE_INVENTORY_NAMESPACE"), opts.ArgoNamespace)
		if !namespaceName.MatchString(ns) {
			// A control character was refused above; anything else is not echoed either.
			return "", render.Options{}, fmt.Errorf("the inventory namespace (ARGOCD_ENV_INVENTORY_NAMESPACE, or the sidecar's SPOKEFORGE_INVENTORY_NAMESPACE) is not a namespace name: lowercase letters, digits and '-', at most 63")
		}
		opts.InventoryNamespace = ns
	}
	if u, err := url.Parse(opts.RepoURL); err == nil && u.User != nil {
		// Never copied into hub Applications, never repeated.
		return "", render.Options{}, fmt.Errorf("ARGOCD_APP_SOURCE_REPO_URL carries user information: use Argo CD repository credentials instead")
	}
	return mode, opts, nil
}

// namespaceName is a Kubernetes namespace name (an RFC 1123 label).
var namespaceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// imageRef is an image reference as container runtimes read it (optional
// registry host and port, a lowercase repository path) with a tag or a digest:
// a bare name would pull whatever :latest is that day.
var imageRef = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]{1,5})?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
	`(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}(?:@sha256:[0-9a-f]{64})?|@sha256:[0-9a-f]{64})$`)

// agentImage is the image of the spoke's agent and credential refresher: the
// plugin parameter image, else the Application's env SPOKEFORGE_IMAGE, else
// the spokeforge sidecar's own SPOKEFORGE_IMAGE (which the install sets). There
// is no built-in default: a tag no registry holds would leave every spoke's
// agent pulling forever, with Argo CD reporting only Progressing.
func agentImage(ps map[string]string, getenv Env) (string, error) {
	for _, s := range []struct{ where, value string }{
		{"plugin parameter image", ps["image"]},
		{"the Application's env SPOKEFORGE_IMAGE (ARGOCD_ENV_SPOKEFORGE_IMAGE)", getenv("ARGOCD_ENV_SPOKEFORGE_IMAGE")},
		{"SPOKEFORGE_IMAGE of the spokeforge sidecar", getenv("SPOKEFORGE_IMAGE")},
	} {
		if s.value == "" {
			continue
		}
		// The value is not repeated: a misplaced credential must not reach an error.
		if len(s.value) > 512 || !imageRef.MatchString(s.value) {
			return "", fmt.Errorf("%s is not an image reference with a tag or digest (registry/repository:tag, or @sha256:<64 hex>)", s.where)
		}
		return s.value, nil
	}
	return "", errors.New("no agent image: set SPOKEFORGE_IMAGE on the spokeforge sidecar (manifests/cmp, docs/install.md), or the plugin parameter image on the Application")
}

// renderDir is Render with the directory's display name given.
func renderDir(dir, displayDir, mode string, getenv Env) ([]byte, error) {
	mode, opts, err := renderOptions(mode, getenv)
	if err != nil {
		return nil, err
	}
	return render1(dir, displayDir, mode, opts)
}

func render1(dir, displayDir, mode string, opts render.Options) ([]byte, error) {
	switch mode {
	case ModeSpoke, ModeHub:
		e, errs := repo.LoadCluster(dir, displayDir)
		if len(errs) > 0 {
			return nil, errs
		}
		return renderCluster(e, dir, displayDir, mode, opts)
	case ModeProjects:
		r, errs := repo.Load(dir)
		if len(errs) > 0 {
			return nil, errs
		}
		objs, err := render.Projects(r.Clusters, r.Orgs, r.Products, opts)
		if err != nil {
			return nil, err
		}
		return write(objs, displayDir, mode)
	}
	return nil, fmt.Errorf("mode %q: want spoke, hub or projects", mode)
}

// skipHubOverlayCheck switches off the refusal of an overlay on a record
// that lands on the hub, for the test that the hub policy holds without it.
var skipHubOverlayCheck = false

// renderCluster renders a loaded record in spoke or hub mode. Whatever
// lands on the management cluster passes the hub policy here, whether or
// not validation let a record through that should not have reached the
// hub (validate.LandsOnHub): the policy does not trust the record checks.
func renderCluster(e validate.ClusterEntry, dir, displayDir, mode string, opts render.Options) ([]byte, error) {
	onHub := validate.LandsOnHub(e.Cluster)
	if mode == ModeHub {
		if opts.SourcePath == "" {
			opts.SourcePath = e.Names.ArgoCD.ComponentsPath
		}
		objs, err := render.Hub(e, opts)
		if err == nil {
			err = render.CheckHubOutput(e.File, e.Cluster.Spec.Org, objs, opts.ArgoNamespace)
		}
		if err != nil {
			return nil, err
		}
		return writeBounded(objs, e.File, displayDir, mode)
	}
	objs, err := render.Spoke(e, opts)
	if err != nil {
		return nil, err
	}
	out, err := writeBounded(objs, e.File, displayDir, mode)
	if err != nil {
		return nil, err
	}
	// Overlays apply to the spoke only: hub and projects output is
	// spokeforge's alone, so nothing in a cluster directory adds objects
	// to the management cluster's argocd namespace.
	overlay := render.Overlay{Dir: dir, Display: displayDir}
	if overlay.File, err = render.FindOverlay(dir); err != nil {
		return nil, err
	}
	if overlay.File != "" && onHub && !skipHubOverlayCheck {
		return nil, &render.OverlayError{File: path.Join(displayDir, overlay.File), Line: 1, Msg: "a record whose spoke is the management cluster (inCluster) takes no overlay: what lands there is exactly spokeforge's render (docs/security.md, \"Hub objects\")"}
	}
	if overlay.File != "" {
		out, err = overlay.Apply(objs, out)
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(out)) == 0 {
			return nil, fmt.Errorf("%s/%s produced no objects: refusing to print an empty stream", displayDir, overlay.File)
		}
		out = append(out, '\n')
	}
	if onHub {
		// Everything such a record deploys lands on the management
		// cluster: the hub policy holds for the result, overlay or not.
		file, overlayFile := e.File, ""
		if overlay.File != "" {
			overlayFile = path.Join(displayDir, overlay.File)
			file = overlayFile
		}
		applied, err := render.DecodeStream(out)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		if err := render.CheckSpokeOnHub(e.File, overlayFile, objs, applied, opts.ArgoNamespace); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// writeBounded is write with the output bounds (render.CheckOutput) held;
// file is the record that made objs.
func writeBounded(objs []render.Object, file, displayDir, mode string) ([]byte, error) {
	out, err := write(objs, displayDir, mode)
	if err != nil {
		return nil, err
	}
	if err := render.CheckOutput(file, out, len(objs)); err != nil {
		return nil, err
	}
	return out, nil
}

// write prints objs in their stable order; never an empty stream.
func write(objs []render.Object, displayDir, mode string) ([]byte, error) {
	if len(objs) == 0 {
		return nil, fmt.Errorf("rendered no objects for %s in mode %s: refusing to print an empty stream, which would let Argo CD prune everything", displayDir, mode)
	}
	render.Sort(objs)
	var buf bytes.Buffer
	if err := render.Write(&buf, objs); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
