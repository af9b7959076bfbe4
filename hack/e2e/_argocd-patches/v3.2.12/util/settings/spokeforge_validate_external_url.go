package settings

// ValidateExternalURL is the name controller/cache/info.go calls at v3.2.12 (a backported fix
// for link annotations), while util/settings at that tag defines the function only unexported,
// so the module does not compile as tagged. v3.3 exports it under this name; this file, added
// by hack/e2e/install.sh to a copy of the module, does the same and nothing else.
func ValidateExternalURL(u string) error { return validateExternalURL(u) }
