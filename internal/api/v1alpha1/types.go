package v1alpha1

// GroupVersion is the apiVersion every record must carry.
const GroupVersion = "spokeforge.io/v1alpha1"

// Kinds of records.
const (
	KindCluster      = "Cluster"
	KindOrganization = "Organization"
	KindProduct      = "Product"
)

// ObjectMeta is the subset of Kubernetes metadata a record may carry.
type ObjectMeta struct {
	// Name of the record. For a Cluster it is the cluster name: lowercase
	// letters, digits and hyphens, at most 42 characters.
	Name string `json:"name" jsonschema:"required"`
	// Labels are copied onto the Argo CD cluster Secret and generator output.
	Labels map[string]string `json:"labels,omitempty"`
}

// Cluster is one spoke: its abstract identity (docs/records.md) and the facts
// onboarding needs. Everything spokeforge renders or names derives from it.
type Cluster struct {
	APIVersion string      `json:"apiVersion" jsonschema:"required,enum=spokeforge.io/v1alpha1"`
	Kind       string      `json:"kind" jsonschema:"required,enum=Cluster"`
	Metadata   ObjectMeta  `json:"metadata" jsonschema:"required"`
	Spec       ClusterSpec `json:"spec" jsonschema:"required"`
}

// ClusterSpec is the body of a Cluster record.
type ClusterSpec struct {
	// ShortName prefixes every cloud resource name (IAM role, SQS queue,
	// S3 bucket, ECR repository). Lowercase letters, digits, hyphens.
	ShortName string `json:"shortName" jsonschema:"required"`
	// Account is the account slug used in the certificate subject and secret path.
	Account string `json:"account" jsonschema:"required"`
	// AccountID is the 12-digit AWS account ID that owns the cloud resources.
	AccountID string `json:"accountID" jsonschema:"required"`
	// Environment, e.g. prod or staging.
	Environment string `json:"environment" jsonschema:"required"`
	// Region is the AWS region the spoke's cloud resources live in.
	Region string `json:"region" jsonschema:"required"`
	// Zone is the site or data-centre zone of the spoke.
	Zone string `json:"zone" jsonschema:"required"`
	// Provider is the infrastructure provider hosting the spoke.
	Provider string `json:"provider" jsonschema:"required"`
	// Project is the hub AppProject of the spoke Application. Default "default".
	// Workload Applications never use it: they go through their org's AppProject (Org).
	Project string `json:"project,omitempty"`
	// Org is the organization whose AppProject (org-<org>) delivers the
	// record's workload Applications; its spec.clusterAllowlist must include
	// this cluster. Required when spec.workloads is not empty.
	Org string `json:"org,omitempty"`
	// Connection says how the hub's Argo CD reaches the spoke.
	Connection Connection `json:"connection" jsonschema:"required"`
	// Identity references what infrastructure code created for IAM Roles Anywhere.
	Identity Identity `json:"identity" jsonschema:"required"`
	// Network facts confirmed on the spoke.
	Network Network `json:"network" jsonschema:"required"`
	// GPU node topology confirmed on the spoke.
	GPU *GPU `json:"gpu,omitempty"`
	// Storage devices handed to the storage engine, each with safety evidence.
	Storage *Storage `json:"storage,omitempty"`
	// Queues the spoke's workloads use (SQS).
	Queues []Queue `json:"queues,omitempty"`
	// Buckets the spoke's workloads use (S3).
	Buckets []Bucket `json:"buckets,omitempty"`
	// Secrets synchronised from Secrets Manager into the spoke.
	Secrets []Secret `json:"secrets,omitempty"`
	// Registries (ECR repositories) whose pull credentials the spoke gets.
	Registries []Registry `json:"registries,omitempty"`
	// Certificates for workloads beyond the workload identity certificate.
	Certificates []Certificate `json:"certificates,omitempty"`
	// Workloads are Applications the hub delivers to the spoke.
	Workloads []Workload `json:"workloads,omitempty"`
	// Stabilization delivers workload Applications without automated sync,
	// for a first installation of hardware-sensitive workloads.
	Stabilization bool `json:"stabilization,omitempty"`
}

// Connection is how Argo CD reaches the spoke's API server. Exactly one of
// InCluster or Server is set. Credentials are never in git: they live in
// Secrets Manager under the cluster's secret path and reach the hub through
// an ExternalSecret.
type Connection struct {
	// InCluster: the spoke is the hub itself (https://kubernetes.default.svc).
	InCluster bool `json:"inCluster,omitempty"`
	// Server is the API server URL Argo CD reaches (https).
	Server string `json:"server,omitempty"`
	// Credentials describes the kubeconfig-style credential stored for Argo CD.
	Credentials *Credentials `json:"credentials,omitempty"`
}

// Credentials mirrors the user part of a kubeconfig, by reference only.
// Argo CD needs a credential it can store, so the exec, authProvider and
// tokenFile forms are recognised only to be refused with a clear reason,
// and inline token or key data is refused because it would put a
// credential in git.
type Credentials struct {
	// Type is bearerToken or clientCertificate.
	Type string `json:"type" jsonschema:"required,enum=bearerToken,enum=clientCertificate"`
	// SecretName is the Secrets Manager secret under the cluster's secret path
	// holding the credential (keys bearerToken or certData/keyData, and caData).
	// Default "argocd-cluster".
	SecretName string `json:"secretName,omitempty"`
	// Exec is refused: an exec plugin runs in Argo CD's pods.
	Exec map[string]any `json:"exec,omitempty"`
	// AuthProvider is refused: auth-provider plugins are not storable.
	AuthProvider map[string]any `json:"authProvider,omitempty"`
	// TokenFile is refused: a file on a laptop is not storable.
	TokenFile string `json:"tokenFile,omitempty"`
	// Token is refused: a credential in git.
	Token string `json:"token,omitempty"`
	// ClientKeyData is refused: a credential in git.
	ClientKeyData string `json:"clientKeyData,omitempty"`
}

// Identity references the IAM Roles Anywhere objects infrastructure created.
type Identity struct {
	// TrustAnchorArn of the Roles Anywhere trust anchor.
	TrustAnchorArn string `json:"trustAnchorArn" jsonschema:"required"`
	// ProfileArn of the Roles Anywhere profile.
	ProfileArn string `json:"profileArn" jsonschema:"required"`
	// RoleArn, if set, must name the derived IAM role in AccountID: it proves
	// Terraform and GitOps agree on the name.
	RoleArn string `json:"roleArn,omitempty"`
	// Issuer is the cert-manager issuer that signs the workload certificate.
	Issuer IssuerRef `json:"issuer" jsonschema:"required"`
	// SessionDurationSeconds of the Roles Anywhere session, 900-43200. Default 3600.
	SessionDurationSeconds int `json:"sessionDurationSeconds,omitempty"`
}

// IssuerRef names a cert-manager issuer.
type IssuerRef struct {
	// Kind is ClusterIssuer (default) or Issuer.
	Kind string `json:"kind,omitempty"`
	// Name of the issuer.
	Name string `json:"name" jsonschema:"required"`
	// Group of the issuer; default cert-manager.io.
	Group string `json:"group,omitempty"`
}

// Network facts confirmed on the spoke.
type Network struct {
	// PodCIDR of the spoke.
	PodCIDR string `json:"podCIDR" jsonschema:"required"`
	// ServiceCIDR of the spoke.
	ServiceCIDR string `json:"serviceCIDR" jsonschema:"required"`
	// DNSServiceIP is the cluster DNS resolver; it lies inside ServiceCIDR.
	DNSServiceIP string `json:"dnsServiceIP" jsonschema:"required"`
}

// GPU is the node topology confirmed on the spoke.
type GPU struct {
	// Nodes with GPUs.
	Nodes []GPUNode `json:"nodes" jsonschema:"required"`
}

// GPUNode is one GPU node as confirmed on the target cluster.
type GPUNode struct {
	// Name is the Kubernetes node name.
	Name string `json:"name" jsonschema:"required"`
	// Product as GPU feature discovery names it, e.g. NVIDIA-A100-SXM4-80GB.
	Product string `json:"product" jsonschema:"required"`
	// Count of GPUs (allocatable nvidia.com/gpu).
	Count int `json:"count" jsonschema:"required"`
	// MemoryMiB per GPU.
	MemoryMiB int `json:"memoryMiB,omitempty"`
	// MIGStrategy is none (default), single or mixed.
	MIGStrategy string `json:"migStrategy,omitempty"`
}

// Storage lists the raw block devices given to workloads as local
// block PersistentVolumes.
type Storage struct {
	// StorageClass the devices are offered under. Default "spokeforge-local-block".
	StorageClass string `json:"storageClass,omitempty"`
	// Devices, each with the evidence that it is safe to use.
	Devices []Device `json:"devices" jsonschema:"required"`
}

// Device is one raw block device on one node.
type Device struct {
	// Node is the Kubernetes node name.
	Node string `json:"node" jsonschema:"required"`
	// Path is a stable device path, /dev/disk/by-id/... preferred.
	Path string `json:"path" jsonschema:"required"`
	// Capacity as a Kubernetes quantity, e.g. 3576Gi.
	Capacity string `json:"capacity" jsonschema:"required"`
	// Safety is the evidence the device may be handed over; without all
	// three proofs the device is refused.
	Safety *DeviceSafety `json:"safety,omitempty"`
}

// DeviceSafety is the evidence gathered on the node right before onboarding.
type DeviceSafety struct {
	// Unpartitioned: no partition table and no filesystem signature (lsblk -f FSTYPE empty).
	Unpartitioned bool `json:"unpartitioned"`
	// Unmounted: no mountpoint on the device or its children.
	Unmounted bool `json:"unmounted"`
	// NotRaidMember: not part of an md or hardware RAID array.
	NotRaidMember bool `json:"notRaidMember"`
	// CheckedAt is when the evidence was gathered (RFC 3339).
	CheckedAt string `json:"checkedAt" jsonschema:"required"`
	// CheckedBy says who or what gathered it, e.g. "lsblk -f; cat /proc/mdstat".
	CheckedBy string `json:"checkedBy,omitempty"`
}

// Queue is an SQS queue named <shortName>-<purpose>[.fifo].
type Queue struct {
	// Purpose, e.g. jobs. Lowercase letters, digits, hyphens.
	Purpose string `json:"purpose" jsonschema:"required"`
	// FIFO makes it a FIFO queue (name ends in .fifo).
	FIFO bool `json:"fifo,omitempty"`
}

// Bucket is an S3 bucket named <shortName>-<purpose>.
type Bucket struct {
	// Purpose, e.g. models.
	Purpose string `json:"purpose" jsonschema:"required"`
}

// Secret is a Secrets Manager secret <secretPath>/<name> synchronised into
// a Kubernetes Secret of the same name.
type Secret struct {
	// Name of the secret; also the Kubernetes Secret name.
	Name string `json:"name" jsonschema:"required"`
	// Namespace the Kubernetes Secret lands in.
	Namespace string `json:"namespace" jsonschema:"required"`
	// Keys (JSON properties of the secret value) to copy; empty copies all.
	Keys []string `json:"keys,omitempty"`
	// RefreshInterval of the ExternalSecret. Default 1h.
	RefreshInterval string `json:"refreshInterval,omitempty"`
}

// Registry is an ECR repository named <shortName>/<purpose>; the spoke gets
// pull credentials for its registry in each namespace listed.
type Registry struct {
	// Purpose, e.g. inference.
	Purpose string `json:"purpose" jsonschema:"required"`
	// Namespaces that get the pull secret.
	Namespaces []string `json:"namespaces" jsonschema:"required"`
}

// Certificate is a workload certificate (cert-manager) beyond the identity one.
type Certificate struct {
	// Name of the Certificate and of its Secret.
	Name string `json:"name" jsonschema:"required"`
	// Namespace of the Certificate.
	Namespace string `json:"namespace" jsonschema:"required"`
	// DNSNames the certificate covers.
	DNSNames []string `json:"dnsNames" jsonschema:"required"`
	// Issuer; default the identity issuer.
	Issuer *IssuerRef `json:"issuer,omitempty"`
}

// Workload is an Application the hub delivers to the spoke.
type Workload struct {
	// Name; the Application is named <cluster>-<name>.
	Name string `json:"name" jsonschema:"required"`
	// Namespace on the spoke.
	Namespace string `json:"namespace" jsonschema:"required"`
	// RepoURL of the source; default the gitops repo.
	RepoURL string `json:"repoURL,omitempty"`
	// Path in the source repo.
	Path string `json:"path" jsonschema:"required"`
	// TargetRevision; default the gitops repo's revision.
	TargetRevision string `json:"targetRevision,omitempty"`
}

// Organization is an org and the clusters it may place zones on.
type Organization struct {
	APIVersion string           `json:"apiVersion" jsonschema:"required,enum=spokeforge.io/v1alpha1"`
	Kind       string           `json:"kind" jsonschema:"required,enum=Organization"`
	Metadata   ObjectMeta       `json:"metadata" jsonschema:"required"`
	Spec       OrganizationSpec `json:"spec" jsonschema:"required"`
}

// OrganizationSpec is the body of an Organization.
type OrganizationSpec struct {
	// ClusterAllowlist names the clusters the org's zones may land on.
	ClusterAllowlist []string `json:"clusterAllowlist"`
	// HubNamespaces are the management cluster's namespaces the org's zones
	// (and its workloads on an inCluster cluster) may use: none other there.
	// Platform admins list them (orgs/ is theirs); spokeforge creates each
	// at the Pod Security "restricted" level.
	HubNamespaces []string `json:"hubNamespaces,omitempty"`
}

// Product is an org's product and the zones it delivers.
type Product struct {
	APIVersion string      `json:"apiVersion" jsonschema:"required,enum=spokeforge.io/v1alpha1"`
	Kind       string      `json:"kind" jsonschema:"required,enum=Product"`
	Metadata   ObjectMeta  `json:"metadata" jsonschema:"required"`
	Spec       ProductSpec `json:"spec" jsonschema:"required"`
}

// ProductSpec is the body of a Product.
type ProductSpec struct {
	// Source of the product's manifests; zones add their own path.
	Source *ProductSource `json:"source,omitempty"`
	// Delivery lists the zones.
	Delivery Delivery `json:"delivery" jsonschema:"required"`
}

// ProductSource is where a product's manifests live.
type ProductSource struct {
	// RepoURL; default the gitops repo.
	RepoURL string `json:"repoURL,omitempty"`
	// TargetRevision; default HEAD.
	TargetRevision string `json:"targetRevision,omitempty"`
}

// Delivery lists the zones of a product.
type Delivery struct {
	Zones []Zone `json:"zones" jsonschema:"required"`
}

// Zone is one deployment of a product.
type Zone struct {
	// Name of the zone; the Application is product-<name>. Unique across the repo.
	Name string `json:"name" jsonschema:"required"`
	// Environment, e.g. pre-release or release.
	Environment string `json:"environment" jsonschema:"required"`
	// Cluster the zone runs on; empty means the management (hub) cluster.
	Cluster string `json:"cluster,omitempty"`
	// Namespace on the destination; default the zone name.
	Namespace string `json:"namespace,omitempty"`
	// Path of the zone's manifests in the source; default products/<org>/<product>/<zone>.
	Path string `json:"path,omitempty"`
	// ApplicationPath overrides where the zone's Application file would live in a registry layout.
	ApplicationPath string `json:"applicationPath,omitempty"`
}
