package redact

// format is a token format with a distinctive literal prefix, ported from the documented
// rules of public secret-scanner rule sets. Its expression starts at the first anchor
// byte (or back bytes before it) and must end at a token boundary.
type format struct {
	kind    string
	anchors []string
	re      string
	back    int
	// random, when set, requires the whole match to hold digits and both letter cases.
	random bool
	// noWordStart lets the match start right after a word byte.
	noWordStart bool
	// start, when set, computes where a match starts from its anchor's position.
	start func(text string, pos int) int
}

// formats are the prefixed token formats beyond the ones in builtins. The expressions are
// deliberately no stricter than the providers' documented lengths, so a shorter or longer
// body of the same family is still caught.
var formats = []format{
	{kind: "gitlab_token", anchors: []string{"gldt-", "glptt-", "glrt-", "gloas-", "glcbt-", "glimt-", "glft-", "glsoat-", "glagent-", "glffct-", "glwt-"},
		re: `gl[a-z]{2,6}-[A-Za-z0-9_-]{20,}`},
	{kind: "gitlab_token", anchors: []string{"GR1348941"}, re: `GR1348941[A-Za-z0-9_-]{20,}`},
	{kind: "slack_token", anchors: []string{"xapp-"}, re: `xapp-\d-[A-Z0-9]+-\d+-[A-Za-z0-9]+`},
	{kind: "slack_token", anchors: []string{"xoxe"}, re: `xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{40,}`},
	{kind: "webhook_secret", anchors: []string{"whsec_"}, re: `whsec_[A-Za-z0-9+/=]{24,}`},
	{kind: "square_token", anchors: []string{"sq0atp-", "sq0csp-"}, re: `sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}`},
	{kind: "square_token", anchors: []string{"EAAA"}, re: `EAAA[A-Za-z0-9_-]{60}`, random: true},
	{kind: "facebook_token", anchors: []string{"EAAC", "EAAG", "EAAM"}, re: `EAA[CGM][A-Za-z0-9]{90,}`, random: true},
	{kind: "aws_access_key", anchors: []string{"A3T", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA"}, re: `(?:A3T[A-Z0-9]|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}`},
	{kind: "google_oauth_secret", anchors: []string{"GOCSPX-"}, re: `GOCSPX-[A-Za-z0-9_-]{20,}`},
	{kind: "google_oauth_token", anchors: []string{"ya29."}, re: `ya29\.[A-Za-z0-9_-]{30,}`},
	{kind: "azure_ad_secret", anchors: []string{"Q~"}, back: 4, re: `[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}`},
	{kind: "huggingface_token", anchors: []string{"api_org_"}, re: `api_org_[A-Za-z0-9]{30,}`, random: true},
	{kind: "rubygems_key", anchors: []string{"rubygems_"}, re: `rubygems_[a-f0-9]{48}`},
	{kind: "nuget_key", anchors: []string{"oy2"}, re: `oy2[a-z0-9]{43}`},
	{kind: "twilio_key", anchors: []string{"AC"}, re: `AC[a-f0-9]{32}`},
	{kind: "discord_token", anchors: []string{"MT", "Mj", "Mz", "ND", "NT", "Nj", "Nz", "OD", "OT"},
		re: `[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}`},
	{kind: "discord_webhook", anchors: []string{"discord.com/api/webhooks/", "discordapp.com/api/webhooks/"},
		re: `discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{40,}`},
	{kind: "telegram_bot_token", anchors: []string{":AA"}, re: `\d{8,10}:AA[A-Za-z0-9_-]{33}`, start: digitsBefore},
	{kind: "mailgun_key", anchors: []string{"key-"}, re: `key-[0-9a-f]{32}`},
	{kind: "fcm_server_key", anchors: []string{":APA91b"}, back: 11, re: `AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{130,}`},
	{kind: "mailchimp_key", anchors: []string{"-us"}, back: 32, re: `[0-9a-f]{32}-us\d{1,2}`},
	{kind: "grafana_token", anchors: []string{"glsa_"}, re: `glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}`},
	{kind: "grafana_token", anchors: []string{"glc_"}, re: `glc_[A-Za-z0-9+/]{32,}={0,2}`},
	{kind: "grafana_token", anchors: []string{"eyJrIjoi"}, re: `eyJrIjoi[A-Za-z0-9+/]{50,}={0,2}`},
	{kind: "newrelic_key", anchors: []string{"NRAK-", "NRII-", "NRJS-", "NRAA-", "NRRA-"}, re: `NR(?:AK|II|JS|AA|RA)-[A-Za-z0-9_-]{20,}`},
	{kind: "sentry_token", anchors: []string{"sntrys_", "sntryu_"}, re: `sntry[su]_[A-Za-z0-9+/=_-]{40,}`},
	{kind: "replicate_token", anchors: []string{"r8_"}, re: `r8_[A-Za-z0-9]{30,}`, random: true},
	{kind: "groq_key", anchors: []string{"gsk_"}, re: `gsk_[A-Za-z0-9]{40,}`},
	{kind: "perplexity_key", anchors: []string{"pplx-"}, re: `pplx-[A-Za-z0-9]{40,}`},
	{kind: "xai_key", anchors: []string{"xai-"}, re: `xai-[A-Za-z0-9]{60,}`},
	{kind: "vault_token", anchors: []string{"hvs.", "hvb.", "hvr."}, re: `hv[sbr]\.[A-Za-z0-9_-]{24,}`},
	{kind: "terraform_token", anchors: []string{".atlasv1."}, back: 14, re: `[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}`},
	{kind: "digitalocean_token", anchors: []string{"dop_v1_", "doo_v1_", "dor_v1_"}, re: `do[opr]_v1_[a-f0-9]{64}`},
	{kind: "shopify_token", anchors: []string{"shpat_", "shpca_", "shppa_", "shpss_"}, re: `shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}`},
	{kind: "linear_key", anchors: []string{"lin_api_"}, re: `lin_api_[A-Za-z0-9]{40}`},
	{kind: "notion_token", anchors: []string{"ntn_"}, re: `ntn_[A-Za-z0-9]{40,}`},
	{kind: "notion_token", anchors: []string{"secret_"}, re: `secret_[A-Za-z0-9]{43}`, random: true},
	{kind: "postman_key", anchors: []string{"PMAK-"}, re: `PMAK-[a-f0-9]{24}-[a-f0-9]{34}`},
	{kind: "heroku_key", anchors: []string{"HRKU-"}, re: `HRKU-[A-Za-z0-9_-]{20,}`},
	{kind: "flyio_token", anchors: []string{"fo1_"}, re: `fo1_[A-Za-z0-9_-]{39,}`},
	{kind: "doppler_token", anchors: []string{"dp.pt.", "dp.st.", "dp.ct.", "dp.sa.", "dp.scim.", "dp.audit."}, re: `dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}`},
	{kind: "pulumi_token", anchors: []string{"pul-"}, re: `pul-[a-f0-9]{40}`},
	{kind: "databricks_token", anchors: []string{"dapi"}, re: `dapi[a-f0-9]{32}(?:-\d)?`},
	{kind: "docker_token", anchors: []string{"dckr_pat_", "dckr_oat_"}, re: `dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}`},
	{kind: "supabase_key", anchors: []string{"sbp_", "sb_secret_"}, re: `(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,})`},
	{kind: "planetscale_token", anchors: []string{"pscale_tkn_", "pscale_pw_", "pscale_oauth_"}, re: `pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}`},
	{kind: "figma_token", anchors: []string{"figd_"}, re: `figd_[A-Za-z0-9_-]{40,}`},
	{kind: "dynatrace_token", anchors: []string{"dt0c01."}, re: `dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}`},
	{kind: "alibaba_key", anchors: []string{"LTAI"}, re: `LTAI[A-Za-z0-9]{20}`},
	{kind: "atlassian_token", anchors: []string{"ATATT3", "ATCTT3"}, re: `AT[AC]TT3[A-Za-z0-9_=-]{100,}`},
	{kind: "onepassword_token", anchors: []string{"ops_eyJ"}, re: `ops_eyJ[A-Za-z0-9+/=_-]{100,}`},
	{kind: "onepassword_token", anchors: []string{"A3-"}, re: `A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}`},
	{kind: "tailscale_key", anchors: []string{"tskey-"}, re: `tskey-[a-z]+-[A-Za-z0-9-]{20,}`},
	{kind: "mapbox_token", anchors: []string{"sk.eyJ"}, re: `sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}`},
	{kind: "easypost_key", anchors: []string{"EZAK", "EZTK"}, re: `EZ[AT]K[A-Za-z0-9]{54}`},
	{kind: "cloudflare_key", anchors: []string{"v1.0-"}, re: `v1\.0-[a-f0-9]{24}-[a-f0-9]{146}`},
	{kind: "contentful_token", anchors: []string{"CFPAT-"}, re: `CFPAT-[A-Za-z0-9_-]{43}`},
	{kind: "typeform_token", anchors: []string{"tfp_"}, re: `tfp_[A-Za-z0-9_.-]{40,}`},
	{kind: "prefect_key", anchors: []string{"pnu_"}, re: `pnu_[A-Za-z0-9]{36}`},
	{kind: "sourcegraph_token", anchors: []string{"sgp_"}, re: `sgp_(?:[a-f0-9]{16}_)?[a-f0-9]{40}`},
	{kind: "readme_key", anchors: []string{"rdme_"}, re: `rdme_[a-z0-9]{70}`},
	{kind: "buildkite_token", anchors: []string{"bkua_"}, re: `bkua_[a-f0-9]{40}`},
	{kind: "clojars_token", anchors: []string{"CLOJARS_"}, re: `CLOJARS_[a-z0-9]{60}`},
	{kind: "adobe_secret", anchors: []string{"p8e-"}, re: `p8e-[A-Za-z0-9]{32}`},
	{kind: "frameio_token", anchors: []string{"fio-u-"}, re: `fio-u-[A-Za-z0-9_=-]{64}`},
	{kind: "infracost_key", anchors: []string{"ico-"}, re: `ico-[A-Za-z0-9]{32}`},
	{kind: "scalingo_token", anchors: []string{"tk-us-"}, re: `tk-us-[A-Za-z0-9_-]{48}`},
	{kind: "shippo_token", anchors: []string{"shippo_live_", "shippo_test_"}, re: `shippo_(?:live|test)_[a-f0-9]{40}`},
	{kind: "flutterwave_key", anchors: []string{"FLWSECK"}, re: `FLWSECK(?:_TEST)?-[a-h0-9]{32}-X`},
	{kind: "airtable_token", anchors: []string{"pat"}, re: `pat[A-Za-z0-9]{14}\.[a-f0-9]{64}`},
	{kind: "braintree_token", anchors: []string{"access_token$"}, re: `access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}`},
	{kind: "age_secret_key", anchors: []string{"AGE-SECRET-KEY-1"}, re: `AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{50,}`},
}

// formatPatterns compiles formats into anchored patterns.
func formatPatterns() []*pattern {
	out := make([]*pattern, 0, len(formats))
	for _, f := range formats {
		random := f.random
		p := &pattern{
			kind:      f.kind,
			re:        anchored(f.re),
			anchors:   f.anchors,
			back:      f.back,
			start:     f.start,
			wordStart: !f.noWordStart,
			valid: func(text string, _ []int, s, e int) bool {
				if e < len(text) && isTokenByte(text[e]) {
					return false // a longer token: not this format
				}
				return !random || looksRandom(text[s:e])
			},
		}
		out = append(out, p)
	}
	return out
}

// formatKinds are the kinds of formats, each once.
func formatKinds() []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range formats {
		if !seen[f.kind] {
			seen[f.kind] = true
			out = append(out, f.kind)
		}
	}
	return out
}

// digitsBefore returns where the run of digits ending at pos starts, or -1.
func digitsBefore(text string, pos int) int {
	st := pos
	for st > 0 && pos-st < 12 && text[st-1] >= '0' && text[st-1] <= '9' {
		st--
	}
	if st == pos {
		return -1
	}
	return st
}
