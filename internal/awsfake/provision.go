package awsfake

import (
	"crypto/x509"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/names"
)

// TrustPolicyConditions are the StringEquals conditions a platform puts on
// the workload role's trust policy for the cluster n: the certificate's
// CN, OU and SPIFFE URI as Roles Anywhere maps them to principal tags, and
// the trust anchor as aws:SourceArn.
func TrustPolicyConditions(n *names.Names, trustAnchorArn string) map[string]string {
	return map[string]string{
		"aws:PrincipalTag/x509Subject/CN": n.SubjectDN.CommonName,
		"aws:PrincipalTag/x509Subject/OU": n.SubjectDN.OrganizationalUnit,
		"aws:PrincipalTag/x509SAN/URI":    n.SubjectURI,
		"aws:SourceArn":                   trustAnchorArn,
	}
}

// ProvisionRecord creates what infrastructure code creates for one cluster
// record: with trust roots, the trust anchor and profile it names and the
// role with its trust-policy conditions; the secrets (each with a JSON value
// {"token": …}, which an extract and a property read both find), the
// repositories, buckets and queues. Derived names in skip are left out.
func ProvisionRecord(f *Server, c *v1alpha1.Cluster, n *names.Names, trust []*x509.Certificate, skip map[string]bool) error {
	id := c.Spec.Identity
	if len(trust) > 0 {
		f.TrustAnchor(id.TrustAnchorArn, trust...)
		f.Profile(id.ProfileArn, n.IAMRoleArn)
	}
	if !skip[n.IAMRole] {
		f.AllowRole(n.IAMRoleArn)
		for k, v := range TrustPolicyConditions(n, id.TrustAnchorArn) {
			f.RoleCondition(n.IAMRoleArn, k, v)
		}
	}
	for _, s := range n.Secrets {
		if !skip[s.Name] {
			f.PutSecretString(s.Name, `{"token":"e2e-`+randomID(12)+`"}`)
		}
	}
	for _, r := range n.Registries {
		if !skip[r.Name] {
			f.AddRepository(r.Name)
		}
	}
	for _, b := range n.Buckets {
		if !skip[b.Name] {
			if err := f.AddBucket(b.Name); err != nil {
				return err
			}
		}
	}
	for _, q := range n.Queues {
		if !skip[q.Name] {
			f.AddQueue(q.Name)
		}
	}
	return nil
}
