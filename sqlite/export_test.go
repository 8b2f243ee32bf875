package sqlite

import "strings"

// ClaimSQLForTest is the claim statement with literal values, for plan tests.
var ClaimSQLForTest = strings.NewReplacer("?", "1").Replace(claimSQL(`? + timeout_ms`, ` AND kind IN ('a', 'b')`))
