// Package names derives every name a cluster record implies — certificate
// subject, cloud resource names, secret path, Argo CD names — in one place,
// so Terraform, GitOps and the agent can never disagree. A name that would
// break a service's rules is reported against the record field it came
// from; nothing is ever truncated.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/iampolicy"
)

// Names is everything derived from one Cluster record. Its JSON form is
// what infrastructure code reads (`spokeforge names -o json`).
type Names struct {
	Cluster string `json:"cluster"`
	// Subject is account/environment/region/zone/provider/cluster.
	Subject     string      `json:"subject"`
	SubjectDN   SubjectDN   `json:"subjectDN"`
	SubjectURI  string      `json:"subjectURI"`
	IAMRole     string      `json:"iamRole"`
	IAMRoleArn  string      `json:"iamRoleArn"`
	SecretPath  string      `json:"secretPath"`
	Secrets     []Cloud     `json:"secrets"`
	Queues      []Cloud     `json:"queues"`
	Buckets     []Cloud     `json:"buckets"`
	Registries  []Cloud     `json:"registries"`
	RegistryURL string      `json:"registryURL"`
	ArgoCD      ArgoCDNames `json:"argocd"`
}

// IAMPolicies are the workload role's two IAM documents, derived with the
// names they name (Policies), for infrastructure code to apply verbatim
// (`spokeforge names -o json` prints them under "iam"): the trust
// policy Roles Anywhere needs to assume the role with the cluster's
// certificate, and the least-privilege permission policy for what the
// spoke reads and uses.
type IAMPolicies struct {
	TrustPolicy iampolicy.Document `json:"trustPolicy"`
	// PermissionPolicy is nil when the record names nothing to allow
	// (IAM refuses a document without statements).
	PermissionPolicy *iampolicy.Document `json:"permissionPolicy"`
}

// SubjectDN is the workload certificate's distinguished name; Roles
// Anywhere maps each RDN to aws:PrincipalTag/x509Subject/<RDN>.
type SubjectDN struct {
	CommonName         string `json:"CN"`
	Organization       string `json:"O"`
	OrganizationalUnit string `json:"OU"`
	Province           string `json:"ST"`
	Locality           string `json:"L"`
}

// Cloud is one derived cloud resource name, with the record field it came from.
type Cloud struct {
	Purpose string `json:"purpose"`
	Name    string `json:"name"`
	// URL or ARN where the service has one worth referencing.
	Ref   string `json:"ref,omitempty"`
	Field string `json:"-"`
}

// ArgoCDNames are the hub-side object names for the cluster.
type ArgoCDNames struct {
	AppOfApps      string `json:"appOfApps"`
	ClusterSecret  string `json:"clusterSecret"`
	SpokeApp       string `json:"spokeApplication"`
	ComponentsPath string `json:"componentsPath"`
}

// FieldError is a derived name that breaks a service rule, reported
// against the record field that produced it.
type FieldError struct {
	Path string
	Msg  string
}

// InClusterServer is Argo CD's built-in destination for the hub itself.
const InClusterServer = "https://kubernetes.default.svc"

// DefaultCredentialsSecret is the Secrets Manager secret (under the
// secret path) that holds the hub's credential for the spoke.
const DefaultCredentialsSecret = "argocd-cluster"

// ReservedSecretPrefix starts the names under a cluster's secret path that
// are the platform's (DefaultCredentialsSecret among them): no spec.secrets
// entry may take one, so neither a record nor spokeforge secrets sync writes
// what the hub's store reads into Argo CD.
const ReservedSecretPrefix = "argocd-"

// Spoke Secrets that spokeforge itself writes, which a spec.secrets entry
// (an ExternalSecret and its target Secret of that name) must not take over:
// the credentials helper's AWS session and everything named spokeforge-
// (the registry pull secret, the helper's objects).
const (
	AWSCredentialsSecret = "aws-credentials"
	PlatformObjectPrefix = "spokeforge-"
)

// CredentialsSecret is the secret under c's secret path that holds the hub's
// credential for the spoke: connection.credentials.secretName or the default.
func CredentialsSecret(c *v1alpha1.Cluster) string {
	if cr := c.Spec.Connection.Credentials; cr != nil && cr.SecretName != "" {
		return cr.SecretName
	}
	return DefaultCredentialsSecret
}

// ReservedSecretProblem says why name may not be a spec.secrets entry of c
// ("" if it may): it is c's connection credential, in the platform's prefix,
// or one of the Secrets spokeforge writes on the spoke.
// No message names the secret: a record may have put a credential in secretName.
func ReservedSecretProblem(c *v1alpha1.Cluster, name string) string {
	switch {
	case name == CredentialsSecret(c):
		return "is reserved: it is the cluster's connection credential (connection.credentials.secretName, default " + DefaultCredentialsSecret + "), which infrastructure writes for the hub, never the repo"
	case strings.HasPrefix(name, ReservedSecretPrefix):
		return "is reserved: names starting with " + ReservedSecretPrefix + " are the platform's (the hub's connection credential among them)"
	case name == AWSCredentialsSecret || strings.HasPrefix(name, PlatformObjectPrefix):
		return "is reserved: " + AWSCredentialsSecret + " and names starting with " + PlatformObjectPrefix + " are Secrets spokeforge writes on the spoke (the AWS session, the registry pull secret)"
	}
	return ""
}

// Lengths are checked beside the patterns, not with counted repetitions: a
// pattern like x{1,512} compiles to a program of 512 copies of x, at package
// init of every spokeforge process (it was 1.8 ms and 0.5 MB of each render).
var (
	iamRoleRE   = regexp.MustCompile(`^[A-Za-z0-9_+=,.@-]+$`)         // and at most 64
	sqsRE       = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)              // and at most 80
	s3RE        = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`) // and 3-63 long
	ipShapedRE  = regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+$`)
	ecrRE       = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`)
	smRE        = regexp.MustCompile(`^[A-Za-z0-9/_+=.@-]+$`) // and at most 512
	smSuffixRE  = regexp.MustCompile(`-[A-Za-z0-9]{6}$`)
	dnsLabelRE  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	s3Forbidden = []string{"xn--", "sthree-", "amzn-s3-demo-"}
	s3BadSuffix = []string{"-s3alias", "--ol-s3", ".mrap"}
)

// Derive computes every name for c. Errors name the record field whose
// value made a derived name break its service's rules.
func Derive(c *v1alpha1.Cluster) (*Names, []FieldError) {
	s := c.Spec
	name := c.Metadata.Name
	var errs []FieldError
	bad := func(path, format string, args ...any) {
		errs = append(errs, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	n := &Names{
		Cluster: name,
		Subject: strings.Join([]string{s.Account, s.Environment, s.Region, s.Zone, s.Provider, name}, "/"),
		SubjectDN: SubjectDN{
			CommonName: name, Organization: s.Account, OrganizationalUnit: s.Environment,
			Province: s.Region, Locality: s.Zone + "." + s.Provider,
		},
		SecretPath:  strings.Join([]string{s.Account, s.Region, s.Zone, s.Provider, name}, "/"),
		RegistryURL: fmt.Sprintf("%s.dkr.ecr.%s.amazonaws.com", s.AccountID, s.Region),
		ArgoCD: ArgoCDNames{
			AppOfApps:      AppOfApps(name),
			ClusterSecret:  ClusterSecret(name),
			SpokeApp:       SpokeApplication(name),
			ComponentsPath: "clusters/" + name,
		},
	}
	n.SubjectURI = "spiffe://spokeforge.io/" + n.Subject

	n.IAMRole = s.ShortName + "-workload"
	n.IAMRoleArn = fmt.Sprintf("arn:aws:iam::%s:role/%s", s.AccountID, n.IAMRole)
	if len(n.IAMRole) > 64 || !iamRoleRE.MatchString(n.IAMRole) {
		bad("spec.shortName", "derived IAM role name %q breaks IAM's rules (1-64 characters of A-Za-z0-9_+=,.@-)", n.IAMRole)
	}

	if len(n.SecretPath) > 400 {
		bad("spec", "secret path %q is over 400 characters; Secrets Manager names stop at 512", n.SecretPath)
	}
	for i, sec := range s.Secrets {
		field := fmt.Sprintf("spec.secrets[%d].name", i)
		full := n.SecretPath + "/" + sec.Name
		n.Secrets = append(n.Secrets, Cloud{Purpose: sec.Name, Name: full, Field: field})
		switch {
		case ReservedSecretProblem(c, sec.Name) != "":
			bad(field, "%s", ReservedSecretProblem(c, sec.Name))
		case len(full) > 512 || !smRE.MatchString(full):
			bad(field, "derived Secrets Manager name %q breaks its rules (1-512 of A-Za-z0-9/_+=.@-)", full)
		case smSuffixRE.MatchString(full):
			bad(field, "derived Secrets Manager name %q ends in a hyphen and six characters, which clashes with the ARN's random suffix", full)
		}
	}
	for i, q := range s.Queues {
		field := fmt.Sprintf("spec.queues[%d].purpose", i)
		qn := s.ShortName + "-" + q.Purpose
		if q.FIFO {
			qn += ".fifo"
		}
		base := strings.TrimSuffix(qn, ".fifo")
		if len(qn) > 80 || !sqsRE.MatchString(base) {
			bad(field, "derived SQS queue name %q breaks SQS's rules (at most 80 characters of A-Za-z0-9_-, plus .fifo)", qn)
		}
		n.Queues = append(n.Queues, Cloud{Purpose: q.Purpose, Name: qn, Field: field,
			Ref: fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", s.Region, s.AccountID, qn)})
	}
	for i, b := range s.Buckets {
		field := fmt.Sprintf("spec.buckets[%d].purpose", i)
		bn := s.ShortName + "-" + b.Purpose
		if msg := s3Problem(bn); msg != "" {
			bad(field, "derived S3 bucket name %q %s", bn, msg)
		}
		n.Buckets = append(n.Buckets, Cloud{Purpose: b.Purpose, Name: bn, Field: field, Ref: "arn:aws:s3:::" + bn})
	}
	for i, r := range s.Registries {
		field := fmt.Sprintf("spec.registries[%d].purpose", i)
		rn := s.ShortName + "/" + r.Purpose
		if len(rn) < 2 || len(rn) > 256 || !ecrRE.MatchString(rn) {
			bad(field, "derived ECR repository name %q breaks ECR's rules (2-256 characters, lowercase, separators . _ __ - and /)", rn)
		}
		n.Registries = append(n.Registries, Cloud{Purpose: r.Purpose, Name: rn, Field: field, Ref: n.RegistryURL + "/" + rn})
	}
	for _, an := range []string{n.ArgoCD.AppOfApps, n.ArgoCD.ClusterSecret, n.ArgoCD.SpokeApp} {
		if len(an) > 63 || !dnsLabelRE.MatchString(an) {
			bad("metadata.name", "derived Argo CD name %q is not a DNS label of at most 63 characters", an)
		}
	}
	return n, errs
}

// RolesAnywhereService is the principal a Roles Anywhere trust policy trusts.
const RolesAnywhereService = "rolesanywhere.amazonaws.com"

// Policies derives the workload role's documents from the record c and its
// names n (Derive). They are not part of Names, which the generator holds
// for every cluster and hands to ApplicationSets: no template needs them.
// The trust policy pins
// the trust anchor (aws:SourceArn) and every subject RDN and the SPIFFE URI
// of the cluster's certificate as Roles Anywhere maps them to principal
// tags (x509Subject/<RDN>, x509SAN/URI): only this cluster's certificate
// from this anchor assumes the role. The permission policy allows the
// spoke's reads and uses on the derived resources and nothing else; ECR's
// GetAuthorizationToken has no resource-level permission, so it is "*".
func Policies(c *v1alpha1.Cluster, n *Names) IAMPolicies {
	s := c.Spec
	trust := iampolicy.Document{Version: iampolicy.Version, Statement: []iampolicy.Statement{{
		Sid:       "RolesAnywhereClusterCertificate",
		Effect:    "Allow",
		Principal: map[string]iampolicy.Strings{"Service": {RolesAnywhereService}},
		Action:    iampolicy.Strings{"sts:AssumeRole", "sts:TagSession", "sts:SetSourceIdentity"},
		Condition: map[string]map[string]iampolicy.Strings{
			"ArnEquals": {"aws:SourceArn": {s.Identity.TrustAnchorArn}},
			"StringEquals": {
				"aws:PrincipalTag/x509Subject/CN": {n.SubjectDN.CommonName},
				"aws:PrincipalTag/x509Subject/O":  {n.SubjectDN.Organization},
				"aws:PrincipalTag/x509Subject/OU": {n.SubjectDN.OrganizationalUnit},
				"aws:PrincipalTag/x509Subject/ST": {n.SubjectDN.Province},
				"aws:PrincipalTag/x509Subject/L":  {n.SubjectDN.Locality},
				"aws:PrincipalTag/x509SAN/URI":    {n.SubjectURI},
			},
		},
	}}}
	var sts []iampolicy.Statement
	add := func(sid string, actions []string, resources []string) {
		if len(resources) > 0 {
			sts = append(sts, iampolicy.Statement{Sid: sid, Effect: "Allow", Action: actions, Resource: resources})
		}
	}
	arn := func(service, resource string) string {
		return fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, s.Region, s.AccountID, resource)
	}
	var secrets, repos, queues, buckets, objects []string
	for _, x := range n.Secrets {
		// A second layer under Derive's check: the role never reads a reserved
		// secret (the hub's credential for the spoke), whatever Names it is handed.
		if ReservedSecretProblem(c, x.Purpose) != "" {
			continue
		}
		// Secrets Manager appends "-" and six random characters to a secret's ARN.
		secrets = append(secrets, arn("secretsmanager", "secret:"+x.Name+"-??????"))
	}
	for _, x := range n.Registries {
		repos = append(repos, arn("ecr", "repository/"+x.Name))
	}
	for _, x := range n.Queues {
		queues = append(queues, arn("sqs", x.Name))
	}
	for _, x := range n.Buckets {
		buckets = append(buckets, "arn:aws:s3:::"+x.Name)
		objects = append(objects, "arn:aws:s3:::"+x.Name+"/*")
	}
	add("ReadClusterSecrets", []string{"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}, secrets)
	if len(repos) > 0 {
		add("RegistryToken", []string{"ecr:GetAuthorizationToken"}, []string{"*"})
	}
	add("PullClusterRepositories", []string{"ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:DescribeRepositories", "ecr:GetDownloadUrlForLayer"}, repos)
	add("UseClusterQueues", []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:SendMessage"}, queues)
	add("ListClusterBuckets", []string{"s3:GetBucketLocation", "s3:ListBucket"}, buckets)
	add("UseClusterBucketObjects", []string{"s3:DeleteObject", "s3:GetObject", "s3:PutObject"}, objects)
	p := IAMPolicies{TrustPolicy: trust}
	if len(sts) > 0 {
		p.PermissionPolicy = &iampolicy.Document{Version: iampolicy.Version, Statement: sts}
	}
	return p
}

func s3Problem(b string) string {
	switch {
	case len(b) < 3 || len(b) > 63:
		return "must be 3-63 characters long"
	case !s3RE.MatchString(b):
		return "may hold only lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit"
	case strings.Contains(b, ".."):
		return "may not contain two adjacent dots"
	case ipShapedRE.MatchString(b):
		return "may not look like an IP address"
	}
	for _, p := range s3Forbidden {
		if strings.HasPrefix(b, p) {
			return "may not start with " + p
		}
	}
	for _, p := range s3BadSuffix {
		if strings.HasSuffix(b, p) {
			return "may not end with " + p
		}
	}
	return ""
}

// ZoneApplication is the Argo CD Application name of a zone.
func ZoneApplication(zone string) string { return "product-" + zone }

// AppOfApps is the Argo CD app-of-apps of a cluster (hub mode).
func AppOfApps(cluster string) string { return "registry-" + cluster }

// ClusterSecret is the Argo CD cluster Secret of a cluster.
func ClusterSecret(cluster string) string { return "cluster-" + cluster }

// SpokeApplication is the Argo CD Application that syncs a cluster's spoke.
func SpokeApplication(cluster string) string { return "spoke-" + cluster }

// OrgProject is the AppProject of an org's zones.
func OrgProject(org string) string { return "org-" + org }

// PVName is the PersistentVolume the CMP renders for a device: stable for
// the same node and path, and what the agent checks for.
func PVName(cluster string, d v1alpha1.Device) string {
	sum := sha256.Sum256([]byte(d.Node + "\x00" + d.Path))
	return fmt.Sprintf("%s-%s", cluster, hex.EncodeToString(sum[:5]))
}

// WorkloadApplication is the Argo CD Application of a record's workload.
func WorkloadApplication(cluster, workload string) string { return cluster + "-" + workload }
