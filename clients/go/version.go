// Package insight is the Go client of insightd, a fraud-risk decision service: evaluations
// with their proof (Insight-Receipt, verified by default), consumption reports, labels, the
// subject authorization switch, the insight catalog and the admin API, with problem codes as
// typed errors and retries that never evaluate twice. See README.md and docs/client.md.
package insight

// Version is this client's version (semantic versioning), sent in its User-Agent.
const Version = "1.0.0"
