package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Boundaries are the onboarding contracts in the order they are established
// (docs/contracts.md): the first one not True is the first failed boundary.
var Boundaries = []string{"Identity", "Secrets", "Certificates", "Registry", "Queues", "Storage", "Workload"}

// ConditionReady is the summary condition that names the first failed boundary.
const ConditionReady = "Ready"

// Onboarding is one spoke's onboarding contracts and their state as the spokeforge agent last checked them.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=Ready,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name=First-Failed,type=string,JSONPath=`.status.firstFailedBoundary`
// +kubebuilder:printcolumn:name=Message,type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
type Onboarding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              OnboardingSpec   `json:"spec,omitempty"`
	Status            OnboardingStatus `json:"status,omitempty"`
}

// OnboardingSpec is what the spoke is expected to satisfy, rendered from its cluster record.
type OnboardingSpec struct {
	// Cluster name (the record's metadata.name).
	Cluster string `json:"cluster"`
	// Certificate subject account/environment/region/zone/provider/cluster.
	// +optional
	Subject string `json:"subject"`
	// AWS account that owns the cloud resources.
	// +optional
	AccountID string `json:"accountID"`
	// AWS region of the cloud resources.
	// +optional
	Region string `json:"region"`
	// The derived IAM role the workload identity assumes.
	// +optional
	IAMRoleArn string `json:"iamRoleArn"`
	// Roles Anywhere trust anchor.
	// +optional
	TrustAnchorArn string `json:"trustAnchorArn"`
	// Roles Anywhere profile.
	// +optional
	ProfileArn string `json:"profileArn"`
	// The Secrets Manager path of the cluster's secrets.
	// +optional
	SecretPath string `json:"secretPath"`
	// Boundaries checked, in order.
	// +optional
	// +kubebuilder:validation:items:Enum=Identity;Secrets;Certificates;Registry;Queues;Storage;Workload
	Boundaries []string `json:"boundaries"`
	// Secrets Manager secrets (full names) and the ExternalSecret delivering each.
	// +optional
	Secrets []SecretRef `json:"secrets,omitempty"`
	// The ClusterSecretStore the ExternalSecrets read through.
	// +optional
	ClusterSecretStore string `json:"clusterSecretStore"`
	// cert-manager Certificates, the workload identity first.
	// +optional
	Certificates []ObjectRef `json:"certificates"`
	// ECR repository names.
	// +optional
	Registries []string `json:"registries,omitempty"`
	// ExternalSecrets delivering the registry pull credentials.
	// +optional
	RegistrySecrets []ObjectRef `json:"registrySecrets,omitempty"`
	// SQS queue names.
	// +optional
	Queues []string `json:"queues,omitempty"`
	// S3 bucket names.
	// +optional
	Buckets []string `json:"buckets,omitempty"`
	// StorageClass the record's devices are offered under.
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// PersistentVolumes rendered for the record's devices.
	// +optional
	Volumes []string `json:"volumes,omitempty"`
	// GPU nodes and their confirmed topology.
	// +optional
	GPUNodes []GPUTopology `json:"gpuNodes,omitempty"`
	// Stabilization is the record's spec.stabilization: the hub delivers the spoke's workload
	// Applications without automated sync, so each sync is a person's decision.
	// +optional
	Stabilization bool `json:"stabilization,omitempty"`
}

// SecretRef is one Secrets Manager secret and its ExternalSecret.
type SecretRef struct {
	Name           string    `json:"name"`
	ExternalSecret ObjectRef `json:"externalSecret"`
}

// ObjectRef names a namespaced object.
type ObjectRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (r ObjectRef) String() string { return r.Namespace + "/" + r.Name }

// GPUTopology is one GPU node's expected topology.
type GPUTopology struct {
	Node    string `json:"node"`
	Product string `json:"product"`
	Count   int    `json:"count"`
	// +optional
	// +kubebuilder:validation:Enum=none;single;mixed
	MIGStrategy string `json:"migStrategy"`
}

// OnboardingStatus is what the agent writes on the status subresource.
type OnboardingStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// The first boundary, in order, that is not True; empty when all hold.
	// +optional
	FirstFailedBoundary string `json:"firstFailedBoundary"`
	// When the agent last finished a check.
	// +optional
	// +kubebuilder:validation:Format=date-time
	CheckedAt string `json:"checkedAt,omitempty"`
	// What the spoke's Connected condition says (docs/contracts.md), as the agent read it.
	// +optional
	Connected *Connected `json:"connected,omitempty"`
	// One condition per boundary and the Ready summary.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []Condition `json:"conditions"`
	// One entry per boundary checked: the evidence behind its condition and, when the boundary
	// waits on a backed-off retry, when that retry is due. Absent when written by an agent older
	// than this field; the conditions alone still decide health.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=7
	Boundaries []BoundaryStatus `json:"boundaries,omitempty"`
}

// Bounds of a boundary's evidence in the status (the markers below say the same), so a status
// stays well under etcd's object size limit: at most 7·16 items of 256+512 characters.
const (
	MaxEvidenceItems  = 16
	MaxEvidenceCheck  = 256
	MaxEvidenceDetail = 512
)

// BoundaryStatus is what the agent observed for one boundary in its last check.
type BoundaryStatus struct {
	// Name of the boundary.
	// +kubebuilder:validation:Enum=Identity;Secrets;Certificates;Registry;Queues;Storage;Workload
	Name string `json:"name"`
	// The observations behind the boundary's condition, in the order they were made. At most 16:
	// when there are more, the worst ones are kept (Failed, NotChecked, Pending, then Passed) and
	// evidenceOmitted counts the rest.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Evidence []EvidenceItem `json:"evidence,omitempty"`
	// How many observations were left out of evidence to keep the status small.
	// +optional
	// +kubebuilder:validation:Minimum=0
	EvidenceOmitted int32 `json:"evidenceOmitted,omitempty"`
	// When the dependency the boundary waits on retries by itself (cert-manager's issuance
	// backoff after a failed CertificateRequest), the earliest when several do. Unset when no
	// retry is scheduled or its time is not known. It may be in the past when the retry is overdue.
	// +optional
	// +kubebuilder:validation:Format=date-time
	NextRetryTime string `json:"nextRetryTime,omitempty"`
}

// EvidenceItem is one observation: what was called or read and what came back. It never holds a
// credential, token or secret value.
type EvidenceItem struct {
	// What was called or read, e.g. "Certificate inference/inference-serving" or "sqs:GetQueueUrl eue1-jobs";
	// cut at 256 characters, ending "..." when cut.
	// +kubebuilder:validation:MaxLength=256
	Check string `json:"check"`
	// The observation's result.
	// +kubebuilder:validation:Enum=Passed;Pending;Failed;NotChecked
	Result string `json:"result"`
	// What came back, in a sentence; cut at 512 characters, ending "..." when cut.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Detail string `json:"detail,omitempty"`
}

// Connected is the spoke's Kubernetes version and node count as the agent read them, and when.
type Connected struct {
	// +optional
	KubernetesVersion string `json:"kubernetesVersion"`
	// +optional
	NodeCount int `json:"nodeCount"`
	// +optional
	// +kubebuilder:validation:Format=date-time
	CheckedAt string `json:"checkedAt"`
}

// Condition is one boundary's (or the Ready summary's) state.
type Condition struct {
	// Identity, Secrets, Certificates, Registry, Queues, Storage, Workload or Ready.
	Type string `json:"type"`
	// +kubebuilder:validation:Enum="True";"False";"Unknown"
	Status string `json:"status"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`
	// Set only when status is False; Warning means pending (retrying).
	// +optional
	// +kubebuilder:validation:Enum=Error;Warning;Info;""
	Severity string `json:"severity,omitempty"`
	// +optional
	// +kubebuilder:validation:Format=date-time
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}
