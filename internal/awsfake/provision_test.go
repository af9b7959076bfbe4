package awsfake_test

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/spokeforge/spokeforge/internal/awsfake"
	"github.com/spokeforge/spokeforge/internal/credentials"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// TestProvisionRecordTrustsOnlyItsSubject: an account provisioned from the example record (its
// role's trust policy as spokeforge names derives it) issues credentials for a certificate with
// the record's derived subject from the platform CA, and for no certificate from the same CA
// that differs in any subject RDN or the SPIFFE URI.
func TestProvisionRecordTrustsOnlyItsSubject(t *testing.T) {
	e, errs := repo.LoadCluster("../../examples/gitops/clusters/gpu-east-1", "gpu-east-1")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	platform := newCA(t, "platform")
	f := awsfake.New(e.Cluster.Spec.AccountID, e.Cluster.Spec.Region)
	url, err := f.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := awsfake.ProvisionRecord(f, e.Cluster, e.Names, []*x509.Certificate{platform.cert}, nil); err != nil {
		t.Fatal(err)
	}
	n := e.Names
	dn := n.SubjectDN
	other := func(edit func(*leafSpec)) leafSpec {
		l := leafSpec{cn: dn.CommonName, ou: dn.OrganizationalUnit, st: dn.Province, l: dn.Locality, uri: n.SubjectURI}
		if edit != nil {
			edit(&l)
		}
		return l
	}
	for _, tc := range []struct {
		name string
		leaf leafSpec
		ok   bool
	}{
		{"the record's subject", other(nil), true},
		{"another cluster", other(func(l *leafSpec) {
			l.cn, l.uri = "gpu-west-9", strings.Replace(n.SubjectURI, "gpu-east-1", "gpu-west-9", 1)
		}), false},
		{"another environment", other(func(l *leafSpec) { l.ou = "dev" }), false},
		{"another region", other(func(l *leafSpec) { l.st = "us-west-2" }), false},
		{"another zone", other(func(l *leafSpec) { l.l = "dc-sea1.equinix" }), false},
		{"no locality", other(func(l *leafSpec) { l.l = "" }), false},
		{"another SPIFFE URI", other(func(l *leafSpec) { l.uri += "-x" }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.leaf.notAfter = time.Now().Add(time.Hour)
			crt, key := writeLeaf(t, platform, tc.leaf)
			_, err := credentials.Exchange(credentials.Options{Certificate: crt, PrivateKey: key,
				TrustAnchorArn: e.Cluster.Spec.Identity.TrustAnchorArn, ProfileArn: e.Cluster.Spec.Identity.ProfileArn,
				RoleArn: n.IAMRoleArn, Region: e.Cluster.Spec.Region, SessionDuration: time.Hour, Endpoint: url})
			if (err == nil) != tc.ok {
				t.Fatalf("CreateSession: %v, want success %v", err, tc.ok)
			}
		})
	}
	if f.SecretVersions(n.Secrets[0].Name) != 1 {
		t.Fatalf("secret %s has %d versions, want a value", n.Secrets[0].Name, f.SecretVersions(n.Secrets[0].Name))
	}
}
