package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"

	"github.com/spokeforge/spokeforge/internal/awsfake"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// provisionFake builds a fake account; with a record folder it holds every
// resource the record derives except the names listed. With trustPEM (a
// PEM file of CA certificates) the record's trust anchor trusts those CAs
// and CreateSession checks the chain, the profile and the role's
// trust-policy conditions; without, it trusts any certificate.
func provisionFake(dir, trustPEM string, except []string) (*awsfake.Server, error) {
	if dir == "" {
		return awsfake.New("111122223333", "us-east-1"), nil
	}
	e, errs := repo.LoadCluster(dir, dir)
	if len(errs) > 0 {
		return nil, errs
	}
	var trust []*x509.Certificate
	if trustPEM != "" {
		b, err := os.ReadFile(trustPEM)
		if err != nil {
			return nil, err
		}
		for blk, rest := pem.Decode(b); blk != nil; blk, rest = pem.Decode(rest) {
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", trustPEM, err)
			}
			trust = append(trust, c)
		}
		if len(trust) == 0 {
			return nil, fmt.Errorf("%s holds no PEM certificate", trustPEM)
		}
	}
	skip := map[string]bool{}
	for _, x := range except {
		skip[x] = true
	}
	f := awsfake.New(e.Cluster.Spec.AccountID, e.Cluster.Spec.Region)
	return f, awsfake.ProvisionRecord(f, e.Cluster, e.Names, trust, skip)
}
