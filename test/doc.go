// Package test holds the suites that exercise spokeforge as users meet it,
// beside the unit tests that live with each package: hostile/ (hostile
// repo changes against validate, render and the generator, run by make
// test), e2e/ (a real Argo CD hub and spoke as processes, make e2e; its
// fakeaws/ tool stands in for AWS) and bench/ (make bench).
package test
