// Package validate checks records field by field and a whole gitops repo
// across files. Every finding carries the file, line and field path.
package validate

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/names"
	"github.com/spokeforge/spokeforge/internal/record"
)

var (
	clusterNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	slugRE        = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	accountIDRE   = regexp.MustCompile(`^\d{12}$`)
	regionRE      = regexp.MustCompile(`^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}$`)
	raArnRE       = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:rolesanywhere:([a-z0-9-]+):(\d{12}):(trust-anchor|profile)/[0-9a-f-]{36}$`)
	roleArnRE     = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:iam::(\d{12}):role/(.+)$`)
	quantityRE    = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$`)
	durationRE    = regexp.MustCompile(`^([0-9]+(s|m|h))+$`)
	devicePathRE  = regexp.MustCompile(`^/dev/[A-Za-z0-9._:/+-]+$`)
)

// MaxClusterName is the longest cluster name (docs/records.md).
const MaxClusterName = 42

type checker struct {
	file  string
	lines record.Lines
	errs  record.Errors
}

func (c *checker) fail(path, format string, args ...any) {
	c.errs = append(c.errs, record.Error{File: c.file, Line: c.lines.Line(path), Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) slug(path, v string, max int) {
	switch {
	case v == "":
		c.fail(path, "required")
	case len(v) > max:
		c.fail(path, "%q is %d characters; at most %d", v, len(v), max)
	case !slugRE.MatchString(v):
		c.fail(path, "%q must be lowercase letters, digits and hyphens, starting and ending with a letter or digit", v)
	}
}

func (c *checker) header(apiVersion, kind, want string) {
	if apiVersion != v1alpha1.GroupVersion {
		c.fail("apiVersion", "must be %s, got %q", v1alpha1.GroupVersion, apiVersion)
	}
	if kind != want {
		c.fail("kind", "must be %s, got %q", want, kind)
	}
}

// Cluster checks one Cluster record and derives its names, once: a name
// that breaks a service's rules is a finding on the record field it came
// from. The names are nil when the record has findings.
func Cluster(file string, lines record.Lines, cl *v1alpha1.Cluster) (*names.Names, record.Errors) {
	c := &checker{file: file, lines: lines}
	c.header(cl.APIVersion, cl.Kind, v1alpha1.KindCluster)
	name := cl.Metadata.Name
	switch {
	case name == "":
		c.fail("metadata.name", "required")
	case len(name) > MaxClusterName:
		c.fail("metadata.name", "%q is %d characters; a cluster name has at most %d", name, len(name), MaxClusterName)
	case !clusterNameRE.MatchString(name):
		c.fail("metadata.name", "%q must be lowercase letters, digits and hyphens (no uppercase, no leading or trailing hyphen)", name)
	case ReservedClusterName(name) != "":
		c.fail("metadata.name", "%q is reserved: %s", name, ReservedClusterName(name))
	}
	c.labels(cl.Metadata.Labels)
	s := cl.Spec
	c.slug("spec.shortName", s.ShortName, 20)
	c.slug("spec.account", s.Account, 32)
	c.slug("spec.environment", s.Environment, 32)
	c.slug("spec.zone", s.Zone, 32)
	c.slug("spec.provider", s.Provider, 32)
	switch {
	case s.AccountID == "":
		c.fail("spec.accountID", "required")
	case !accountIDRE.MatchString(s.AccountID):
		c.fail("spec.accountID", "%q must be a 12-digit AWS account ID (quote it so YAML keeps leading zeros)", s.AccountID)
	}
	switch {
	case s.Region == "":
		c.fail("spec.region", "required")
	case !regionRE.MatchString(s.Region):
		c.fail("spec.region", "%q is not an AWS region name such as us-east-1", s.Region)
	}
	if s.Project != "" {
		c.slug("spec.project", s.Project, 63)
		if strings.HasPrefix(s.Project, names.OrgProject("")) {
			c.fail("spec.project", "%q names an org's AppProject: those deliver zones and workloads (spec.org), not the spoke Application", s.Project)
		}
	}
	if s.Org != "" {
		c.slug("spec.org", s.Org, 50)
	} else if len(s.Workloads) > 0 {
		c.fail("spec.org", "required with spec.workloads: the org whose AppProject (org-<org>) delivers them, and whose spec.clusterAllowlist includes %q", name)
	}
	c.connection(s.Connection)
	if s.Connection.InCluster {
		c.hubNamespaces(s)
	}
	c.identity(s)
	c.network(s.Network)
	c.gpu(s.GPU)
	c.storage(s.Storage)
	c.workloads(name, s)

	var n *names.Names
	if namesDerivable(c.errs) {
		var nerrs []names.FieldError
		n, nerrs = names.Derive(cl)
		for _, e := range nerrs {
			c.fail(e.Path, "%s", e.Msg)
		}
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return n, nil
}

// namesDerivable reports whether checking derived names adds anything:
// not when their inputs (name, identity fields) are already reported broken.
func namesDerivable(errs record.Errors) bool {
	for _, e := range errs {
		switch e.Path {
		case "metadata.name", "spec.shortName", "spec.account", "spec.environment", "spec.region", "spec.zone", "spec.provider", "spec.accountID":
			return false
		}
	}
	return true
}

func (c *checker) connection(conn v1alpha1.Connection) {
	const p = "spec.connection"
	switch {
	case conn.InCluster && conn.Server != "":
		c.fail(p, "set inCluster or server, not both")
	case !conn.InCluster && conn.Server == "":
		c.fail(p, "set inCluster: true or server (the API server URL Argo CD reaches)")
	case conn.Server != "":
		c.serverURL(p+".server", conn.Server)
		if conn.Credentials == nil {
			c.fail(p+".credentials", "required with server: say which credential type the hub stores (bearerToken or clientCertificate)")
		}
	}
	cr := conn.Credentials
	if cr == nil {
		return
	}
	cp := p + ".credentials"
	if conn.InCluster {
		c.fail(cp, "not used with inCluster: Argo CD uses its own service account")
	}
	const storable = "Argo CD needs a credential it can store: use a bearer token (e.g. a ServiceAccount token) or a client certificate"
	if cr.Exec != nil {
		c.fail(cp+".exec", "exec plugins are refused: they run inside Argo CD's pods with binaries and credentials it does not have. %s", storable)
	}
	if cr.AuthProvider != nil {
		c.fail(cp+".authProvider", "auth-provider plugins are refused. %s", storable)
	}
	if cr.TokenFile != "" {
		c.fail(cp+".tokenFile", "token files are refused: a file on one machine is not a credential Argo CD can store. %s", storable)
	}
	if cr.Token != "" {
		c.fail(cp+".token", "an inline token would put a credential in git: store it in Secrets Manager under the cluster's secret path and reference it with secretName")
	}
	if cr.ClientKeyData != "" {
		c.fail(cp+".clientKeyData", "inline key data would put a credential in git: store it in Secrets Manager under the cluster's secret path and reference it with secretName")
	}
	// Values under credentials are never repeated: a token pasted into
	// the wrong field must not reach a CI log.
	if cr.Type != "bearerToken" && cr.Type != "clientCertificate" {
		c.fail(cp+".type", "must be bearerToken or clientCertificate (the value given is not repeated)")
	}
	if n := cr.SecretName; n != "" && (len(n) > 128 || !slugRE.MatchString(n)) {
		c.fail(cp+".secretName", "must be at most 128 lowercase letters, digits and hyphens, starting and ending with a letter or digit: the name of a secret under the cluster's secret path, never the credential itself (the value given is not repeated)")
	}
}

func (c *checker) identity(s v1alpha1.ClusterSpec) {
	const p = "spec.identity"
	id := s.Identity
	for _, f := range []struct{ path, v, kind string }{
		{p + ".trustAnchorArn", id.TrustAnchorArn, "trust-anchor"},
		{p + ".profileArn", id.ProfileArn, "profile"},
	} {
		m := raArnRE.FindStringSubmatch(f.v)
		switch {
		case m == nil || m[4] != f.kind:
			c.fail(f.path, "%q is not a Roles Anywhere %s ARN (arn:aws:rolesanywhere:<region>:<account>:%s/<uuid>)", f.v, f.kind, f.kind)
		case m[3] != s.AccountID && s.AccountID != "":
			c.fail(f.path, "account %s differs from spec.accountID %s", m[3], s.AccountID)
		}
	}
	if id.RoleArn != "" {
		m := roleArnRE.FindStringSubmatch(id.RoleArn)
		want := s.ShortName + "-workload"
		switch {
		case m == nil:
			c.fail(p+".roleArn", "%q is not an IAM role ARN", id.RoleArn)
		case m[2] != s.AccountID && s.AccountID != "":
			c.fail(p+".roleArn", "account %s differs from spec.accountID %s", m[2], s.AccountID)
		case m[3] != want:
			c.fail(p+".roleArn", "role %q differs from the derived role %q: infrastructure and GitOps must use the same name", m[3], want)
		}
	}
	if id.Issuer.Name == "" {
		c.fail(p+".issuer.name", "required: the cert-manager issuer that signs the workload certificate")
	} else {
		c.issuer(p+".issuer", id.Issuer)
	}
	if d := id.SessionDurationSeconds; d != 0 && (d < 900 || d > 43200) {
		c.fail(p+".sessionDurationSeconds", "%d is outside Roles Anywhere's 900-43200 seconds", d)
	}
}

// issuer checks a cert-manager issuerRef: a DNS-subdomain name and group,
// and a kind that is ClusterIssuer or Issuer for cert-manager's own group,
// or an identifier for an external issuer's group.
func (c *checker) issuer(p string, ref v1alpha1.IssuerRef) {
	if ref.Name == "" {
		c.fail(p+".name", "required")
	} else if msgs := k8svalidation.IsDNS1123Subdomain(ref.Name); len(msgs) > 0 {
		c.fail(p+".name", "%q is not a Kubernetes object name: %s", ref.Name, msgs[0])
	}
	group := ref.Group
	if group != "" {
		if msgs := k8svalidation.IsDNS1123Subdomain(group); len(msgs) > 0 {
			c.fail(p+".group", "%q is not an API group (a DNS subdomain such as cert-manager.io): %s", group, msgs[0])
		}
	}
	switch k := ref.Kind; {
	case k == "":
	case group == "" || group == "cert-manager.io":
		if k != "ClusterIssuer" && k != "Issuer" {
			c.fail(p+".kind", "must be ClusterIssuer or Issuer for cert-manager.io, got %q", k)
		}
	case len(k) > 63 || !kindRE.MatchString(k):
		c.fail(p+".kind", "%q is not a Kubernetes kind (letters and digits, starting with an uppercase letter)", k)
	}
}

// labels checks record labels by Kubernetes' own rules; they land on the
// Argo CD cluster Secret and in generator parameters, so Argo CD's and
// spokeforge's own label prefixes are refused too.
func (c *checker) labels(ls map[string]string) {
	for _, k := range sortedKeys(ls) {
		p := "metadata.labels." + k
		if msgs := k8svalidation.IsQualifiedName(k); len(msgs) > 0 {
			c.fail("metadata.labels", "key %q is not a Kubernetes label key: %s", k, msgs[0])
			continue
		}
		if prefix, _, ok := strings.Cut(k, "/"); ok && reservedLabelPrefix(prefix) {
			c.fail(p, "the %s/ prefix belongs to Argo CD, Kubernetes or spokeforge; a record may not set it", prefix)
			continue
		}
		if msgs := k8svalidation.IsValidLabelValue(ls[k]); len(msgs) > 0 {
			c.fail(p, "%q is not a Kubernetes label value: %s", ls[k], msgs[0])
		}
	}
}

func reservedLabelPrefix(prefix string) bool {
	for _, r := range []string{"argocd.argoproj.io", "argoproj.io", "spokeforge.io", "kubernetes.io", "k8s.io"} {
		if prefix == r || strings.HasSuffix(prefix, "."+r) {
			return true
		}
	}
	return false
}

// serverURL checks the API server URL Argo CD dials: https, a host, no
// user information, query or fragment. The URL is repeated without its
// user information only.
func (c *checker) serverURL(p, v string) {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		c.fail(p, "is not a URL")
	case u.User != nil:
		c.fail(p, "must not carry user information (user:password@): credentials live in Secrets Manager under the cluster's secret path")
	case u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		c.fail(p, "%q must be an https URL with a host", v)
	case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(v, "?# "):
		c.fail(p, "%q must not have a query, fragment or spaces", v)
	case HubServerProblem(v) != "":
		c.fail(p, "%q %s; a record with a server is a spoke, never the management cluster", v, HubServerProblem(v))
	}
}

// RepoURLProblem checks a git repository URL an Application will read: https://
// or ssh:// with a host, or the scp form user@host:path; no password, no
// query or fragment. A message repeats the URL without user information.
func RepoURLProblem(v string) string {
	if scpRepoRE.MatchString(v) {
		return ""
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return "is not a URL"
	case u.Scheme != "https" && u.Scheme != "ssh":
		return "must be an https://, ssh:// or user@host:path git URL"
	case u.Host == "" || u.Opaque != "":
		return "must have a host"
	case u.Scheme == "https" && u.User != nil:
		return "must not carry user information: Argo CD's repository credentials hold the secret"
	case u.User != nil:
		if _, has := u.User.Password(); has {
			return "must not carry a password: Argo CD's repository credentials hold the secret"
		}
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(v, "?# ") {
		return "must not have a query, fragment or spaces"
	}
	return ""
}

// RevisionProblem checks a git revision (branch, tag, commit or HEAD).
func RevisionProblem(v string) string {
	if len(v) > 255 || !revisionRE.MatchString(v) || strings.Contains(v, "..") || strings.HasSuffix(v, "/") || strings.HasSuffix(v, ".lock") || strings.Contains(v, "//") {
		return "is not a git branch, tag or commit (letters, digits, . _ / -, not starting with - or /)"
	}
	return ""
}

// PathProblem checks a path inside a source repo: relative, clean, no
// .. component, plain characters.
func PathProblem(v string) string {
	if v == "" {
		return "required"
	}
	if len(v) > 512 || !repoPathRE.MatchString(v) || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "-") {
		return "must be a relative path (letters, digits, . _ / -)"
	}
	for _, part := range strings.Split(v, "/") {
		if part == "" || part == "." || part == ".." {
			return "must be a clean relative path inside the source repo (no empty, . or .. parts)"
		}
	}
	return ""
}

var (
	kindRE     = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	scpRepoRE  = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[A-Za-z0-9._~/-]+$`)
	revisionRE = regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9._/-]*$`)
	repoPathRE = regexp.MustCompile(`^[A-Za-z0-9._/-]+$`)
)

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (c *checker) network(n v1alpha1.Network) {
	const p = "spec.network"
	_, pod, err := net.ParseCIDR(n.PodCIDR)
	if err != nil {
		c.fail(p+".podCIDR", "%q is not a CIDR", n.PodCIDR)
	}
	_, svc, err2 := net.ParseCIDR(n.ServiceCIDR)
	if err2 != nil {
		c.fail(p+".serviceCIDR", "%q is not a CIDR", n.ServiceCIDR)
	}
	if err == nil && err2 == nil && (pod.Contains(svc.IP) || svc.Contains(pod.IP)) {
		c.fail(p+".serviceCIDR", "%s overlaps podCIDR %s", n.ServiceCIDR, n.PodCIDR)
	}
	ip := net.ParseIP(n.DNSServiceIP)
	switch {
	case ip == nil:
		c.fail(p+".dnsServiceIP", "%q is not an IP address", n.DNSServiceIP)
	case err2 == nil && !svc.Contains(ip):
		c.fail(p+".dnsServiceIP", "%s is outside serviceCIDR %s", n.DNSServiceIP, n.ServiceCIDR)
	}
}

func (c *checker) gpu(g *v1alpha1.GPU) {
	if g == nil {
		return
	}
	seen := map[string]bool{}
	for i, n := range g.Nodes {
		p := fmt.Sprintf("spec.gpu.nodes[%d]", i)
		c.nodeName(p+".name", n.Name)
		if seen[n.Name] {
			c.fail(p+".name", "node %q listed twice", n.Name)
		}
		seen[n.Name] = true
		if n.Product == "" || len(k8svalidation.IsValidLabelValue(n.Product)) > 0 {
			c.fail(p+".product", "%q must be a GPU product label value such as NVIDIA-A100-SXM4-80GB", n.Product)
		}
		if n.Count < 1 || n.Count > 64 {
			c.fail(p+".count", "%d must be 1-64", n.Count)
		}
		if n.MemoryMiB < 0 {
			c.fail(p+".memoryMiB", "must not be negative")
		}
		if m := n.MIGStrategy; m != "" && m != "none" && m != "single" && m != "mixed" {
			c.fail(p+".migStrategy", "must be none, single or mixed, got %q", m)
		}
	}
}

func (c *checker) nodeName(path, v string) {
	if v == "" || len(k8svalidation.IsDNS1123Subdomain(v)) > 0 {
		c.fail(path, "%q is not a Kubernetes node name", v)
	}
}

func (c *checker) storage(st *v1alpha1.Storage) {
	if st == nil {
		return
	}
	if st.StorageClass != "" {
		c.slug("spec.storage.storageClass", st.StorageClass, 63)
	}
	seen := map[string]int{}
	for i, d := range st.Devices {
		if strings.Contains(d.Path, "/..") || strings.Contains(d.Path, "/./") {
			c.fail(fmt.Sprintf("spec.storage.devices[%d].path", i), "%q must be a clean path under /dev", d.Path)
		}
		p := fmt.Sprintf("spec.storage.devices[%d]", i)
		c.nodeName(p+".node", d.Node)
		if !devicePathRE.MatchString(d.Path) {
			c.fail(p+".path", "%q must be a device path under /dev (prefer /dev/disk/by-id/...)", d.Path)
		}
		key := d.Node + ":" + d.Path
		if j, dup := seen[key]; dup {
			c.fail(p+".path", "device %s on %s already listed at devices[%d]", d.Path, d.Node, j)
		}
		seen[key] = i
		if !quantityRE.MatchString(d.Capacity) {
			c.fail(p+".capacity", "%q is not a Kubernetes quantity such as 3576Gi", d.Capacity)
		}
		sf := d.Safety
		if sf == nil {
			c.fail(p+".safety", "refused: no safety evidence. A disk is handed to storage only once it is confirmed unpartitioned, unmounted and not a RAID member")
			continue
		}
		for _, proof := range []struct {
			ok   bool
			name string
			why  string
		}{
			{sf.Unpartitioned, "unpartitioned", "it may hold a partition table or filesystem"},
			{sf.Unmounted, "unmounted", "it may be mounted"},
			{sf.NotRaidMember, "notRaidMember", "it may belong to a RAID array"},
		} {
			if !proof.ok {
				c.fail(p+".safety."+proof.name, "refused: must be true (%s); confirm on the node (lsblk -f, findmnt, /proc/mdstat) right before onboarding", proof.why)
			}
		}
		if _, err := time.Parse(time.RFC3339, sf.CheckedAt); err != nil {
			c.fail(p+".safety.checkedAt", "%q must be an RFC 3339 time (when the evidence was gathered)", sf.CheckedAt)
		}
	}
}

func (c *checker) workloads(cluster string, s v1alpha1.ClusterSpec) {
	nsCheck := func(path, v string) { c.slug(path, v, 63) }
	for i, q := range s.Queues {
		c.slug(fmt.Sprintf("spec.queues[%d].purpose", i), q.Purpose, 60)
	}
	for i, b := range s.Buckets {
		c.slug(fmt.Sprintf("spec.buckets[%d].purpose", i), b.Purpose, 60)
	}
	dupes := func(kind string, list []string, path func(int) string) {
		seen := map[string]int{}
		for i, v := range list {
			if j, ok := seen[v]; ok {
				c.fail(path(i), "%s %q already listed at index %d", kind, v, j)
			}
			seen[v] = i
		}
	}
	var qs, bs, ss, rs, ws []string
	for _, q := range s.Queues {
		name := q.Purpose
		if q.FIFO {
			name += ".fifo"
		}
		qs = append(qs, name)
	}
	for _, b := range s.Buckets {
		bs = append(bs, b.Purpose)
	}
	for i, sec := range s.Secrets {
		p := fmt.Sprintf("spec.secrets[%d]", i)
		c.slug(p+".name", sec.Name, 253)
		nsCheck(p+".namespace", sec.Namespace)
		if sec.RefreshInterval != "" && !durationRE.MatchString(sec.RefreshInterval) {
			c.fail(p+".refreshInterval", "%q must be a duration such as 1h or 30m", sec.RefreshInterval)
		}
		for j, k := range sec.Keys {
			if msgs := k8svalidation.IsConfigMapKey(k); len(msgs) > 0 {
				c.fail(fmt.Sprintf("%s.keys[%d]", p, j), "%q is not a Secret key: %s", k, msgs[0])
			}
		}
		ss = append(ss, sec.Namespace+"/"+sec.Name)
	}
	for i, r := range s.Registries {
		p := fmt.Sprintf("spec.registries[%d]", i)
		c.slug(p+".purpose", r.Purpose, 60)
		if len(r.Namespaces) == 0 {
			c.fail(p+".namespaces", "list at least one namespace that pulls from this registry")
		}
		for j, ns := range r.Namespaces {
			nsCheck(fmt.Sprintf("%s.namespaces[%d]", p, j), ns)
		}
		rs = append(rs, r.Purpose)
	}
	for i, ce := range s.Certificates {
		p := fmt.Sprintf("spec.certificates[%d]", i)
		c.slug(p+".name", ce.Name, 253)
		nsCheck(p+".namespace", ce.Namespace)
		if len(ce.DNSNames) == 0 {
			c.fail(p+".dnsNames", "list at least one DNS name")
		}
		for j, d := range ce.DNSNames {
			if len(k8svalidation.IsDNS1123Subdomain(strings.TrimPrefix(d, "*."))) > 0 {
				c.fail(fmt.Sprintf("%s.dnsNames[%d]", p, j), "%q is not a DNS name", d)
			}
		}
		if ce.Issuer != nil {
			c.issuer(p+".issuer", *ce.Issuer)
		}
	}
	for i, w := range s.Workloads {
		p := fmt.Sprintf("spec.workloads[%d]", i)
		c.slug(p+".name", w.Name, max(1, 62-len(cluster))) // the Application is <cluster>-<name>
		nsCheck(p+".namespace", w.Namespace)
		if msg := PathProblem(w.Path); msg != "" {
			c.fail(p+".path", "%q %s", w.Path, msg)
		}
		if w.RepoURL != "" {
			if msg := RepoURLProblem(w.RepoURL); msg != "" {
				c.fail(p+".repoURL", "%q %s", record.Redact(w.RepoURL), msg)
			}
		}
		if w.TargetRevision != "" {
			if msg := RevisionProblem(w.TargetRevision); msg != "" {
				c.fail(p+".targetRevision", "%q %s", w.TargetRevision, msg)
			}
		}
		ws = append(ws, w.Name)
	}
	dupes("queue", qs, func(i int) string { return fmt.Sprintf("spec.queues[%d].purpose", i) })
	dupes("bucket", bs, func(i int) string { return fmt.Sprintf("spec.buckets[%d].purpose", i) })
	dupes("secret", ss, func(i int) string { return fmt.Sprintf("spec.secrets[%d].name", i) })
	dupes("registry", rs, func(i int) string { return fmt.Sprintf("spec.registries[%d].purpose", i) })
	dupes("workload", ws, func(i int) string { return fmt.Sprintf("spec.workloads[%d].name", i) })
}
