package memory

// JSONStringValue is the content string decoder, for its test against encoding/json.
var JSONStringValue = jsonStringValue
