// Package config reads, validates and renders the memctl configuration file.
//
// It owns what is about the file: key names, lines, types, defaults as written, the providers'
// keys and the file paths it names. The rules of the compaction settings belong to package
// memory (compact.Settings.Problems): config maps the compaction section onto compact.Settings
// and words memory's problems with their key and line. It builds the cascade (NewCascade) and
// the compactor over a store (NewCompactor: compact.New, with one redactor for both, and the
// named cascades of the cascades section, NewCascades, as its Summarizers), and may
// import memory, compact, tokencount, cascade, extractive, redact and db; none of them may
// import it.
//
// It is the same file memctl reads (the per-user config.yaml, or the file named
// by --config or $MEMCTL_CONFIG; see [Locate]), exposed as a package so that
// agents embedding memcascade can share one configuration with the CLI, or
// build a [Config] in Go and check it with [Config.Validate].
//
// # The file
//
//	model: gpt-4o                 # the agent's model: picks the tokenizer of new threads
//	encoding: ""                  # force a tokenizer (o200k_base, cl100k_base, p50k_base, r50k_base)
//	encoding_file: ""             # or count with a model's tokenizer.json (byte-level BPE) or a tiktoken-format file
//	encoding_pattern: ""          # a tiktoken-format file's split pattern (regexp2 syntax); "" is cl100k_base's
//	compaction:
//	  token_limit: auto           # memctl serve: the window the upstream reports; 128000 elsewhere
//	  reserve_tokens: 0           # every budget is token_limit - reserve_tokens
//	  target_ratio: 0.5           # system prompt + kept recent messages: up to token_limit × target_ratio
//	  trigger_ratio: 0.8          # compact when the active context passes token_limit × trigger_ratio
//	  summary_max_tokens: 2048
//	  summary_role: system        # system or user
//	  max_passes: 3
//	  attempt_timeout: 5m         # one provider's whole turn, retries and waits included
//	  total_timeout: 15m          # the whole compaction
//	  keep_turns: 0               # keep the newest N user turns whole while they fit (0: off)
//	  compact_every_turns: 0      # a compaction every N user turns, even under the trigger (0: off)
//	  max_cost: 0                 # dollars a priced provider may be estimated at for a summary (0: no limit)
//	  queue_size: 3               # the queue strategy: the most summaries kept as blocks of their own
//	  mask:                       # the mask and hybrid strategies' knobs
//	    keep_tool_results: 0      # the newest N tool results stay (0: the kept window decides)
//	    exclude_tools: []         # tools whose results are never masked
//	    clear_tool_inputs: false  # old tool calls' arguments become a placeholder in the view
//	    clear_thinking: false     # old reasoning leaves the view
//	  cascade: default            # the cascade that writes the summaries: default or a name of cascades
//	  part_cascade: none          # a cascade that reads a long middle in parts first (none: off)
//	redact_patterns: []           # extra regular expressions (Go RE2 syntax)
//	cascade:
//	  - name: local               # required, unique; the key of its cooldown state
//	    type: openai              # openai (default) or extractive
//	    base_url: http://127.0.0.1:11434/v1
//	    model: llama3.2           # required for type openai: what the server serves
//	    api_key_env: ""           # the NAME of the variable holding the key
//	    context_window: 8192      # or auto: read from the server (Ollama, llama.cpp, vLLM)
//	    max_output_tokens: 1024
//	    temperature: 0
//	    timeout: 60s              # one request
//	    max_attempts: 2
//	    max_wait: 10s             # a longer Retry-After or backoff: cooldown, next provider
//	    concurrency: 1            # requests of one compaction in flight at once
//	    cooldown: 30s             # first cooldown; doubles with each consecutive failure
//	    max_cooldown: 1h
//	    # price_per_mtok: {input: 2.5, output: 10}  # dollars per million tokens: attempts get a cost
//	  - name: offline
//	    type: extractive
//	cascades: {}                  # other cascades by name, each a list of providers as above
//	offline: true                 # false: no extractive rung is added to a cascade without one
//
// Every key is optional and takes the default shown; a key whose value is
// null (`key:` or `key: ~`) counts as absent. A cascade list replaces the
// default cascade, and each provider entry takes the per-provider defaults
// for the keys it omits, but model: an openai provider without one is an
// error naming its line. A cascade without an extractive provider gets one,
// named "offline", as its last rung ([Config.NewCascade]) unless the file
// says offline: false, and so does each cascade of cascades. With no file at all ([Default]) the cascade is a
// single extractive provider named "offline", so memctl works offline.
//
// An extractive provider is built in and runs offline: base_url, api_key_env
// and temperature mean nothing to it, and setting any of them to a non-empty
// (non-zero) value is an error ("not used by type extractive"). Its model is
// only a label and defaults to "extractive".
//
// # Strictness
//
// Unknown keys, duplicate keys, values of the wrong type and impossible
// values are errors of type [*Error] naming the file, the line and the key
// ("memctl.yaml:12: compaction.target_ratio: 1.5 is outside (0, 1]"). [Parse]
// reports every problem it finds, in line order, joined with [errors.Join]
// (a single problem is returned as the *Error itself), so errors.As with an
// *Error target always finds the first one. Messages never repeat the value of
// api_key_env, in case a key was pasted there by mistake.
//
// Durations are written as Go durations ("60s", "5m", "1h"); a bare number is
// an error because its unit would be a guess. Integers must be YAML integers
// (1e5 is a float and is rejected). YAML aliases are followed; merge keys
// (<<) are not supported. The file holds exactly one YAML document.
package config
