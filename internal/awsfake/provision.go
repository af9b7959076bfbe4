package awsfake

import (
	"crypto/x509"

	"github.com/spokeforge/spokeforge/internal/api/v1alpha1"
	"github.com/spokeforge/spokeforge/internal/names"
)

// ProvisionRecord creates what infrastructure code creates for one cluster
// record: with trust roots, the trust anchor and profile it names; the
// workload role with the trust and permission policies `spokeforge names -o
// json` gives (names.Policies), which the fake then enforces; the secrets (each with a JSON value
// {"token": …}, which an extract and a property read both find), the
// repositories, buckets and queues. Derived names in skip are left out.
func ProvisionRecord(f *Server, c *v1alpha1.Cluster, n *names.Names, trust []*x509.Certificate, skip map[string]bool) error {
	id := c.Spec.Identity
	if len(trust) > 0 {
		f.TrustAnchor(id.TrustAnchorArn, trust...)
		f.Profile(id.ProfileArn, n.IAMRoleArn)
	}
	if !skip[n.IAMRole] {
		p := names.Policies(c, n)
		f.PutRole(n.IAMRoleArn, p.TrustPolicy)
		if p.PermissionPolicy != nil {
			f.PutRolePolicy(n.IAMRoleArn, "spokeforge", *p.PermissionPolicy)
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
