// Package hostile is the hostile-input suite: each file of cases/ is a
// change a contributor with commit access could make to the example gitops
// repo (edited records, overlays, symlinks) and the refusal spokeforge must
// answer with. The suite runs `spokeforge validate` and `spokeforge render`
// over every case and checks both refuse it with the expected message,
// print nothing on stdout, and never repeat a planted secret.
package hostile
