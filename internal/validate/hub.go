package validate

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/hubpolicy"
	"github.com/spokeforge/spokeforge/internal/names"
)

// The management cluster (the hub) as Argo CD resolves it, and what a
// record may therefore not name. Argo CD (v2.14 and v3.2 alike):
//
//   - util/db/cluster.go: the built-in local cluster is named "in-cluster"
//     with server https://kubernetes.default.svc; GetClusterServersByName
//     answers "in-cluster" with that server whenever no cluster Secret has
//     the in-cluster URL, whatever cluster Secret carries the name too.
//   - util/settings/settings.go (byClusterURLIndexerFunc,
//     byClusterNameIndexerFunc): cluster Secrets are indexed by their server
//     with trailing slashes trimmed (strings.TrimRight(url, "/")), nothing
//     else normalised; GetCluster prefers a Secret whose server is the
//     in-cluster URL over the built-in local cluster, so a Secret with server
//     https://kubernetes.default.svc/ replaces in-cluster with its own
//     credentials.
//   - Every other spelling of the hub's API server (kubernetes.default,
//     kubernetes.default.svc.cluster.local, :443) is not the
//     in-cluster entry to Argo CD but is dialled from Argo CD's own pods,
//     where it reaches the hub's API server all the same.

// InClusterName is the name Argo CD gives its built-in destination for the
// management cluster (util/db/cluster.go localCluster).
const InClusterName = "in-cluster"

// reservedClusterNames are the cluster names Argo CD reserves or resolves
// to the management cluster: a record so named would have its spoke render,
// overlay and workloads delivered there (destination name in-cluster).
var reservedClusterNames = map[string]string{
	InClusterName: "Argo CD's name for the management cluster itself (destination name in-cluster resolves to https://kubernetes.default.svc)",
}

// ReservedClusterName reports why name may not be a cluster name ("" when it may).
func ReservedClusterName(name string) string {
	return reservedClusterNames[name]
}

var numericLabelRE = regexp.MustCompile(`^(0[xX][0-9a-fA-F]*|[0-9]+)$`)

// HubServerProblem reports why an API server URL reaches the management
// cluster rather than a spoke ("" when it does not appear to). It knows the
// in-cluster service names (kubernetes, kubernetes.default,
// kubernetes.default.svc and kubernetes.default.svc.<cluster domain>, any
// port, any case, a trailing dot), and numeric hosts that resolvers read
// as IPv4 in non-canonical forms (127.1, 0x7f.0.0.1, 2130706433), which
// hide what they dial. The hub's API server service IP and external address
// are not knowable from the repo and are not refused here. Loopback and
// unspecified addresses are not refused: from Argo CD's pods they dial the
// pod itself, not the hub's API server, and Argo CD run as processes on one
// host (the end-to-end hub) reaches its spokes there.
func HubServerProblem(server string) string {
	u, err := url.Parse(server)
	if err != nil {
		return ""
	}
	if strings.TrimRight(server, "/") == names.InClusterServer {
		return "is Argo CD's in-cluster address (Argo CD trims trailing slashes): it is the management cluster; use spec.connection.inCluster: true"
	}
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	switch {
	case h == "kubernetes" || h == "kubernetes.default" || h == "kubernetes.default.svc" || strings.HasPrefix(h, "kubernetes.default.svc."):
		return "names the Kubernetes API service of the cluster Argo CD runs in, which is the management cluster's own API server: use spec.connection.inCluster: true for the management cluster"
	case strings.Contains(h, "%"):
		return "has an IPv6 zone: a spoke's API server is reached by a routable address or DNS name"
	}
	if net.ParseIP(h) != nil {
		return ""
	}
	numeric := true
	for _, l := range strings.Split(h, ".") {
		if !numericLabelRE.MatchString(l) {
			numeric = false
			break
		}
	}
	if numeric {
		return "is a numeric host that is not a canonical IP address: resolvers read forms like 127.1, 0x7f.0.0.1 or 2130706433 as IPv4 (loopback among them); write the address in dotted-quad form"
	}
	return ""
}

// HubNamespaceProblem reports why namespace ns may not receive objects on
// the management cluster ("" when it may): a platform namespace
// (hubpolicy.PlatformNamespace).
func HubNamespaceProblem(ns, argoNS string) string {
	return hubpolicy.PlatformNamespace(ns, argoNS)
}

// hubNamespaces checks the namespaces an inCluster record chooses (secrets,
// registries, certificates, workloads): on the management cluster none may
// be a hub system namespace (HubNamespaceProblem).
func (c *checker) hubNamespaces(s v1alpha1.ClusterSpec) {
	check := func(path, ns string) {
		if why := HubNamespaceProblem(ns, ""); why != "" {
			c.fail(path, "%q %s: an inCluster record's spoke is the management cluster, where a record may not place objects or workloads there", ns, why)
		}
	}
	for i, x := range s.Secrets {
		check(fmt.Sprintf("spec.secrets[%d].namespace", i), x.Namespace)
	}
	for i, x := range s.Registries {
		for j, ns := range x.Namespaces {
			check(fmt.Sprintf("spec.registries[%d].namespaces[%d]", i, j), ns)
		}
	}
	for i, x := range s.Certificates {
		check(fmt.Sprintf("spec.certificates[%d].namespace", i), x.Namespace)
	}
	for i, x := range s.Workloads {
		check(fmt.Sprintf("spec.workloads[%d].namespace", i), x.Namespace)
	}
	// Default-deny: the spoke render of an inCluster record holds only the
	// kinds of hubpolicy.SpokeKinds; these two fields would add others.
	if s.Storage != nil {
		c.fail("spec.storage", "an inCluster record's spoke is the management cluster, which takes no local volumes or StorageClass from a record (the device path and its safety evidence are only what the author writes)")
	}
	if len(s.Workloads) > 0 {
		c.fail("spec.workloads", "an inCluster record's spoke is the management cluster, where an org's applications are zones (products/) in the namespaces its orgs/<org>.yaml lists in spec.hubNamespaces")
	}
	if s.GPU != nil {
		c.fail("spec.gpu", "an inCluster record's spoke is the management cluster, whose nodes a record does not label (spec.gpu renders a NodeFeatureRule)")
	}
}

// LandsOnHub reports whether what c deploys reaches the management cluster:
// an inCluster record, or one whose name or server Argo CD resolves to the
// hub. Validation refuses the latter two; render applies the hub policy to
// all three, so that policy holds even where a record check is missed.
func LandsOnHub(c *v1alpha1.Cluster) bool {
	conn := c.Spec.Connection
	return conn.InCluster || ReservedClusterName(c.Metadata.Name) != "" ||
		(conn.Server != "" && HubServerProblem(conn.Server) != "")
}
