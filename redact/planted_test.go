package redact

import (
	"encoding/base64"
	"strings"
	"testing"
)

// The planted secrets below are assembled at run time from a format's documented prefix
// and a generated body, so no test source holds a string a secret scanner would take for
// a live credential; each still has the shape of the real format.

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	lowAlnu = "abcdefghijklmnopqrstuvwxyz0123456789"
	upAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	hexLow  = "0123456789abcdef"
	b64     = alnum + "+/"
	urlB64  = alnum + "-_"
	bech32  = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
)

var fakeSeed uint64 = 0x9E3779B97F4A7C15

// fake returns n bytes drawn from alphabet, deterministically, always holding at least one
// digit, one upper- and one lower-case letter when the alphabet has them.
func fake(n int, alphabet string) string {
	for {
		b := make([]byte, n)
		for i := range b {
			fakeSeed ^= fakeSeed << 13
			fakeSeed ^= fakeSeed >> 7
			fakeSeed ^= fakeSeed << 17
			b[i] = alphabet[fakeSeed%uint64(len(alphabet))]
		}
		s := string(b)
		c, a := classify(s), classify(alphabet)
		if (a.digit == 0 || c.digit > 0) && (a.upper == 0 || c.upper >= min(8, n/5)) && (a.lower == 0 || c.lower >= min(8, n/5)) {
			return s
		}
	}
}

// planted builds a case whose secret is prefix+body, in the text before+secret+after.
func planted(name, kind, before, secret, after string) secretCase {
	return secretCase{name: name, text: before + secret + after, secret: secret, kind: kind,
		keep: []string{before, after}}
}

var plantedCases = buildPlanted()

func buildPlanted() []secretCase {
	pw := "Xq7" + fake(9, alnum)
	ppk := "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n" +
		fake(64, b64) + "\n" + fake(20, b64) + "\nKey-Derivation: Argon2id\nPrivate-Lines: 1\n" + fake(44, b64) +
		"\nPrivate-MAC: " + fake(64, hexLow)
	pem := func(label string) string {
		return "-----BEGIN " + label + "-----\n" + fake(64, b64) + "\n" + fake(40, b64) + "\n-----END " + label + "-----"
	}
	gcpKey := pem("PRIVATE KEY")
	gcpKey = strings.ReplaceAll(gcpKey, "\n", `\n`)
	b64PEM := base64.StdEncoding.EncodeToString([]byte(pem("EC PRIVATE KEY") + "\n"))
	b64Creds := base64.StdEncoding.EncodeToString([]byte("svc_user:" + pw))
	jwtHead := "eyJ" + fake(30, urlB64) + ".eyJ" + fake(20, urlB64)
	jwtTail := fake(40, urlB64) + "." + fake(43, urlB64)
	cases := []secretCase{
		// The shapes reported missed.
		planted("json password with spaces", KindPassword, `{"user": "ops", "password": "`, "correct horse battery staple", `", "port": 5432}`),
		planted("env value with dots", KindAPIKey, "API_KEY=", "x.y.z", " ./deploy.sh"),
		planted("azure storage connection string", KindSecret, "DefaultEndpointsProtocol=https;AccountName=acct1;AccountKey=", fake(86, b64)+"==", ";EndpointSuffix=core.windows.net"),
		planted("go mysql dsn", KindConnectionString, `dsn := "`, "app:"+pw, `@tcp(db.internal:3306)/orders?parseTime=true"`),
		planted("curl -u", KindBasicAuth, "curl -u admin:", pw, " https://api.example.com/v1/me"),
		planted("mysql -p attached", KindPassword, "mysql -u root -p", pw, " orders < dump.sql"),
		planted("mysql -p only", KindPassword, "mysql -p", pw, "\n"),
		planted("--password=", KindPassword, "pg_dump --password=", pw, " --host db"),
		planted("cookie header", KindCookie, "Cookie: ", "sessionid="+fake(32, lowAlnu)+"; csrftoken="+fake(32, alnum), "\nAccept: */*"),
		planted("set-cookie header", KindCookie, "HTTP/1.1 200 OK\nSet-Cookie: ", "session="+fake(40, urlB64)+"; Path=/; HttpOnly; Secure", "\nContent-Type: text/html"),
		planted("digitalocean token", "digitalocean_token", "DO_TOKEN ", "dop_v1_"+fake(64, hexLow), " expires"),
		planted("stripe webhook secret", "webhook_secret", "signing with ", "whsec_"+fake(32, b64), " now"),
		planted("google oauth client secret", "google_oauth_secret", "client secret is ", "GOCSPX-"+fake(28, urlB64), " for the web app"),
		planted("vault service token", "vault_token", "VAULT_TOKEN is ", "hvs."+fake(90, urlB64), " (root)"),
		planted("vault batch token", "vault_token", "batch: ", "hvb."+fake(100, urlB64), " done"),
		planted("grafana service account token", "grafana_token", "use ", "glsa_"+fake(32, alnum)+"_"+fake(8, hexLow), " in the datasource"),
		planted("grafana cloud token", "grafana_token", "token ", "glc_"+fake(80, b64)+"==", " for cloud"),
		planted("age secret key", "age_secret_key", "# created: 2024-01-01\n", "AGE-SECRET-KEY-1"+fake(58, bech32), "\n"),
		planted("putty private key", KindPuTTYKey, "key.ppk holds:\n", ppk, "\nload it with pageant"),
		planted("bare aws secret key", KindAWSSecretKey, "the second value is ", fake(40, b64), " keep it safe"),
		// Private key armors.
		planted("pem ec key", KindPrivateKey, "key:\n", pem("EC PRIVATE KEY"), "\nend"),
		planted("pem dsa key", KindPrivateKey, "key:\n", pem("DSA PRIVATE KEY"), "\nend"),
		planted("pem encrypted key", KindPrivateKey, "key:\n", pem("ENCRYPTED PRIVATE KEY"), "\nend"),
		planted("openssh key", KindPrivateKey, "id_ed25519:\n", pem("OPENSSH PRIVATE KEY"), "\nend"),
		planted("pgp private key block", KindPrivateKey, "gpg --export-secret-keys:\n", pem("PGP PRIVATE KEY BLOCK"), "\nend"),
		planted("ssh2 encrypted key", KindPrivateKey, "key:\n", "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n"+fake(64, b64)+"\n---- END SSH2 ENCRYPTED PRIVATE KEY ----", "\nend"),
		planted("gcp service account json", KindPrivateKey, `{"type": "service_account", "project_id": "demo-1", "private_key": "`, gcpKey, `\n", "client_email": "svc@demo-1.iam.gserviceaccount.com"}`),
		// Contexts: keys, headers, flags, connection strings.
		planted("camelCase dbPassword", KindPassword, `{"dbPassword": "`, "p@ss w0rd!", `"}`),
		planted("db-password flag style key", KindPassword, "db-password: ", pw, "\nhost: x"),
		planted("X-Api-Key header", KindAPIKey, `curl -H "X-Api-Key: `, fake(32, alnum), `" https://api.example.com`),
		planted("x_auth_token", KindToken, "x_auth_token=", fake(24, alnum), "&page=2"),
		planted("yaml password with spaces", KindPassword, "db:\n  password: ", "correct horse battery staple", "\n  host: db"),
		planted("yaml secret quoted with escape", KindSecret, "app_secret: \"", `a\"b `+fake(12, alnum), "\"\nport: 80"),
		planted("ado.net password with spaces", KindPassword, "Server=tcp:db.example.net,1433;Database=app;User ID=sa;Password=", "my s3cret pw", ";Encrypt=True"),
		planted("odbc pwd", KindPassword, "Driver={ODBC Driver 18};Server=db;Uid=sa;Pwd=", pw, ";"),
		planted("service bus shared access key", KindSecret, "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=", fake(43, b64)+"=", ""),
		planted("azure sas sig", KindSignature, "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2025-01-01&sp=r&sig=", fake(43, alnum)+"%3D", "&spr=https"),
		planted("aws presigned signature", KindSignature, "https://b.s3.amazonaws.com/k?X-Amz-Expires=300&X-Amz-Signature=", fake(64, hexLow), "&x=1"),
		planted("xml password element", KindPassword, "<user>sa</user><password>", pw, "</password>"),
		planted("client secret in json", KindSecret, `{"client_id": "web", "client_secret": "`, fake(40, urlB64), `"}`),
		planted("credentials value", KindCredential, "GOOGLE_CREDENTIALS=", fake(30, alnum), "\n"),
		planted("session id key", KindSession, `{"session_id": "`, fake(32, hexLow), `"}`),
		planted("sshpass", KindPassword, "sshpass -p ", pw, " ssh deploy@host"),
		planted("docker login -p", KindPassword, "docker login -u ci -p ", pw, " registry.example.com"),
		planted("redis-cli -a", KindPassword, "redis-cli -h cache -a ", pw, " ping"),
		planted("openssl passin", KindPassword, "openssl rsa -in k.pem -passin pass:", pw, " -out k2.pem"),
		planted("sentry dsn", KindDSNKey, "SENTRY_DSN=https://", fake(32, hexLow), "@o12345.ingest.sentry.io/678"),
		planted("amqps url", KindConnectionString, "amqps://", "svc:"+pw, "@mq.example.com:5671/vhost"),
		planted("password in escaped json with spaces", KindPassword, `{"content": "{\"password\": \"`, "two words", `\", \"user\": \"ops\"}"}`),
		// Prefixed formats.
		planted("gitlab deploy token", "gitlab_token", "token ", "gldt-"+fake(20, urlB64), " ok"),
		planted("gitlab runner token", "gitlab_token", "runner ", "glrt-"+fake(20, urlB64), " ok"),
		planted("slack app token", "slack_token", "SLACK_APP_TOKEN is ", "xapp-1-A"+fake(10, upAlnum)+"-1234567890123-"+fake(64, hexLow), " ok"),
		planted("square access token", "square_token", "square ", "sq0atp-"+fake(22, urlB64), " ok"),
		planted("square oauth secret", "square_token", "square ", "sq0csp-"+fake(43, urlB64), " ok"),
		planted("facebook token", "facebook_token", "fb ", "EAAC"+fake(120, alnum), " ok"),
		planted("aws role id", "aws_access_key", "id ", "AROA"+fake(16, upAlnum), " ok"),
		planted("google oauth access token", "google_oauth_token", "at ", "ya29."+fake(60, urlB64), " ok"),
		planted("azure ad client secret", "azure_ad_secret", "secret value ", fake(3, alnum)+"8Q~"+fake(34, alnum), " ok"),
		planted("huggingface org token", "huggingface_token", "hf ", "api_org_"+fake(34, alnum), " ok"),
		planted("rubygems key", "rubygems_key", "gem ", "rubygems_"+fake(48, hexLow), " ok"),
		planted("nuget key", "nuget_key", "nuget push -k ", "oy2"+fake(43, lowAlnu), " ok"),
		planted("twilio account sid", "twilio_key", "sid ", "AC"+fake(32, hexLow), " ok"),
		planted("discord bot token", "discord_token", "bot ", "MT"+fake(24, alnum)+"."+fake(6, urlB64)+"."+fake(38, urlB64), " ok"),
		planted("discord webhook", "discord_webhook", "post to https://", "discord.com/api/webhooks/123456789012345678/"+fake(68, urlB64), " ok"),
		planted("telegram bot token", "telegram_bot_token", "bot ", "1234567890:AA"+fake(33, urlB64), " ok"),
		planted("mailgun key", "mailgun_key", "mailgun ", "key-"+fake(32, hexLow), " ok"),
		planted("mailchimp key", "mailchimp_key", "mc ", fake(32, hexLow)+"-us21", " ok"),
		planted("new relic key", "newrelic_key", "nr ", "NRAK-"+fake(27, upAlnum), " ok"),
		planted("sentry user token", "sentry_token", "sentry ", "sntryu_"+fake(64, hexLow), " ok"),
		planted("replicate token", "replicate_token", "rep ", "r8_"+fake(37, alnum), " ok"),
		planted("groq key", "groq_key", "groq ", "gsk_"+fake(52, alnum), " ok"),
		planted("perplexity key", "perplexity_key", "pplx ", "pplx-"+fake(48, alnum), " ok"),
		planted("xai key", "xai_key", "grok ", "xai-"+fake(80, alnum), " ok"),
		planted("terraform cloud token", "terraform_token", "tfc ", fake(14, lowAlnu)+".atlasv1."+fake(67, urlB64), " ok"),
		planted("shopify token", "shopify_token", "shop ", "shpat_"+fake(32, hexLow), " ok"),
		planted("linear key", "linear_key", "linear ", "lin_api_"+fake(40, alnum), " ok"),
		planted("notion token", "notion_token", "notion ", "ntn_"+fake(46, alnum), " ok"),
		planted("postman key", "postman_key", "postman ", "PMAK-"+fake(24, hexLow)+"-"+fake(34, hexLow), " ok"),
		planted("heroku key", "heroku_key", "heroku ", "HRKU-"+fake(60, urlB64), " ok"),
		planted("fly.io token", "flyio_token", "fly ", "fo1_"+fake(43, urlB64), " ok"),
		planted("doppler token", "doppler_token", "doppler ", "dp.pt."+fake(43, alnum), " ok"),
		planted("pulumi token", "pulumi_token", "pulumi ", "pul-"+fake(40, hexLow), " ok"),
		planted("databricks token", "databricks_token", "dbx ", "dapi"+fake(32, hexLow), " ok"),
		planted("docker hub token", "docker_token", "hub ", "dckr_pat_"+fake(27, urlB64), " ok"),
		planted("supabase token", "supabase_key", "supa ", "sbp_"+fake(40, hexLow), " ok"),
		planted("planetscale token", "planetscale_token", "ps ", "pscale_tkn_"+fake(43, urlB64), " ok"),
		planted("figma token", "figma_token", "figma ", "figd_"+fake(40, urlB64), " ok"),
		planted("dynatrace token", "dynatrace_token", "dt ", "dt0c01."+fake(24, upAlnum)+"."+fake(64, upAlnum), " ok"),
		planted("alibaba key", "alibaba_key", "ali ", "LTAI"+fake(20, alnum), " ok"),
		planted("atlassian token", "atlassian_token", "jira ", "ATATT3"+fake(180, urlB64), " ok"),
		planted("1password service token", "onepassword_token", "op ", "ops_eyJ"+fake(250, urlB64), " ok"),
		planted("tailscale key", "tailscale_key", "ts ", "tskey-auth-"+fake(12, alnum)+"-"+fake(30, alnum), " ok"),
		planted("mapbox secret token", "mapbox_token", "mapbox ", "sk.eyJ"+fake(60, urlB64)+"."+fake(22, urlB64), " ok"),
		planted("easypost key", "easypost_key", "ep ", "EZAK"+fake(54, alnum), " ok"),
		planted("cloudflare origin ca key", "cloudflare_key", "cf ", "v1.0-"+fake(24, hexLow)+"-"+fake(146, hexLow), " ok"),
		planted("contentful token", "contentful_token", "cf ", "CFPAT-"+fake(43, urlB64), " ok"),
		planted("typeform token", "typeform_token", "tf ", "tfp_"+fake(59, urlB64), " ok"),
		planted("prefect key", "prefect_key", "prefect ", "pnu_"+fake(36, alnum), " ok"),
		planted("sourcegraph token", "sourcegraph_token", "sg ", "sgp_"+fake(40, hexLow), " ok"),
		planted("readme key", "readme_key", "readme ", "rdme_"+fake(70, lowAlnu), " ok"),
		planted("buildkite token", "buildkite_token", "bk ", "bkua_"+fake(40, hexLow), " ok"),
		planted("clojars token", "clojars_token", "clj ", "CLOJARS_"+fake(60, lowAlnu), " ok"),
		planted("adobe secret", "adobe_secret", "adobe ", "p8e-"+fake(32, alnum), " ok"),
		planted("frame.io token", "frameio_token", "frame ", "fio-u-"+fake(64, urlB64), " ok"),
		planted("infracost key", "infracost_key", "ic ", "ico-"+fake(32, alnum), " ok"),
		planted("scalingo token", "scalingo_token", "sc ", "tk-us-"+fake(48, urlB64), " ok"),
		planted("shippo token", "shippo_token", "shippo ", "shippo_live_"+fake(40, hexLow), " ok"),
		planted("flutterwave key", "flutterwave_key", "flw ", "FLWSECK_TEST-"+fake(32, "abcdefgh0123456789")+"-X", " ok"),
		planted("airtable token", "airtable_token", "at ", "pat"+fake(14, alnum)+"."+fake(64, hexLow), " ok"),
		// Shapes of a later hostile run: credentials on command lines, labels without an
		// assignment, encoded and split secrets.
		planted("curl --user", KindBasicAuth, "curl --user bob:", pw, " https://x.example.com"),
		planted("curl --proxy-user=", KindBasicAuth, "curl --proxy-user=px:", pw, " -x proxy:3128 https://x.example.com"),
		planted("wget --user", KindBasicAuth, "wget --user alice:", pw, " https://files.example.com/a.tgz"),
		planted("ldapsearch -w", KindPassword, "ldapsearch -x -D cn=admin,dc=x -w ", pw, " -b dc=x"),
		planted("openssl enc -k", KindPassword, "openssl enc -aes-256-cbc -k ", pw, " -in f -out f.enc"),
		planted("openssl -pass pass:", KindPassword, "openssl enc -d -aes-256-cbc -pass pass:", pw, " -in f.enc"),
		planted("htpasswd -b", KindPassword, "htpasswd -b .htpasswd admin ", pw, "\n"),
		planted("htpasswd -nbB", KindPassword, "htpasswd -nbB admin ", pw, " > users"),
		planted("smbclient -U user%pw", KindPassword, "smbclient //srv/share -U bob%", pw, " -c ls"),
		planted("net use /user:", KindPassword, `net use Z: \\srv\share /user:CORP\bob `, pw, " /persistent:no"),
		planted("net user add", KindPassword, "net user svc_backup ", pw, " /add"),
		planted("zip -P", KindPassword, "zip -r -P ", pw, " backup.zip dir/"),
		planted("7z -p attached", KindPassword, "7z a -p", pw, " -mhe=on secret.7z docs/"),
		planted("sqlcmd -P", KindPassword, "sqlcmd -S db -U sa -P ", pw, " -Q \"select 1\""),
		planted("mongosh -p", KindPassword, "mongosh --host db -u admin -p ", pw, " --authenticationDatabase admin"),
		planted("yaml block scalar password", KindPassword, "db:\n  password: |\n    ", pw, "\n  host: db"),
		planted("yaml folded password with chomping", KindPassword, "password: >-\n  ", pw, "\nuser: app"),
		planted("yaml plain scalar below the key", KindSecret, "client_secret:\n  ", fake(32, alnum), "\nclient_id: web"),
		planted("kubeconfig client-key-data", KindPrivateKey, "users:\n- name: admin\n  user:\n    client-key-data: ", b64PEM, "\n"),
		planted("pem body after a split, with END", KindPrivateKey, "(continued)\n", fake(64, b64)+"\n"+fake(64, b64)+"\n"+fake(24, b64)+"==\n-----END RSA PRIVATE KEY-----", "\nnext"),
		planted("pem body after a split, no END", KindPrivateKey, "part 2:\n", fake(64, b64)+"\n"+fake(64, b64)+"\n"+fake(64, b64)+"\n"+fake(31, b64)+"=", "\n(to be continued)"),
		planted("firebase cloud messaging server key", "fcm_server_key", "server key ", "AAAA"+fake(7, alnum)+":APA91b"+fake(134, urlB64), " for the app"),
		planted("netrc", KindPassword, "machine api.example.com login bob password ", pw, "\n"),
		planted("netrc short password", KindPassword, "machine h login u password ", "hunter2", " account x"),
		planted("Dockerfile ENV with space", KindPassword, "FROM alpine\nENV DB_PASSWORD ", pw, "\nRUN make"),
		planted("SQL IDENTIFIED BY", KindPassword, "CREATE USER app IDENTIFIED BY '", pw, "';"),
		planted("SQL IDENTIFIED WITH plugin BY", KindPassword, "ALTER USER 'app'@'%' IDENTIFIED WITH mysql_native_password BY '", pw, "';"),
		planted("Oracle IDENTIFIED BY unquoted", KindPassword, "CREATE USER scott IDENTIFIED BY ", pw, ";"),
		planted("postgres PASSWORD literal", KindPassword, "ALTER ROLE app WITH LOGIN PASSWORD '", pw, "';"),
		planted("mysql SET PASSWORD FOR", KindPassword, "SET PASSWORD FOR 'app'@'%' = '", pw, "';"),
		planted("Basic credentials outside a header", KindBasicAuth, "the proxy sent Basic ", b64Creds, " upstream"),
		planted("bare base64 user:password", KindBasicAuth, "creds are ", base64.StdEncoding.EncodeToString([]byte("ops:"+pw)), " in the log"),
		planted("jwt split by a line break", KindJWT, "token part ", jwtHead+"\n"+jwtTail, "\nnext line"),
		planted("prose: my password is", KindPassword, "my password is ", pw, " please reset it"),
		planted("prose: the password is:", KindPassword, "the password is: ", pw, "\n"),
		planted("prose: auth token", KindToken, "Twilio auth token ", fake(32, hexLow), " for account"),
		planted("prose: API key", KindAPIKey, "API key ", fake(32, alnum), " was rotated"),
		planted("labelled azure devops PAT", KindToken, "azure devops PAT ", fake(52, "abcdefghijklmnopqrstuvwxyz234567"), " expires soon"),
		planted("PAT env variable", KindToken, "AZURE_DEVOPS_PAT=", fake(52, "abcdefghijklmnopqrstuvwxyz234567"), "\n"),
		planted("full-width colon", KindPassword, "password：", pw, "\n"),
		planted("percent-encoded url userinfo", KindConnectionString, "redirect=https%3A%2F%2F", "bob%3A"+pw, "%40db.example.com&x=1"),
		planted("mailgun key, newer format", "mailgun_key", "mailgun ", fake(32, hexLow)+"-"+fake(8, hexLow)+"-"+fake(8, hexLow), " ok"),
		planted("braintree token", "braintree_token", "bt ", "access_token$production$"+fake(16, lowAlnu)+"$"+fake(32, hexLow), " ok"),
	}
	return cases
}

func TestPlantedSecrets(t *testing.T) {
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range plantedCases {
		t.Run(c.name, func(t *testing.T) {
			got, n := r.Redact(c.text)
			if strings.Contains(got, c.secret) {
				t.Errorf("secret survived: %q", got)
			}
			if !strings.Contains(got, Marker(c.kind)) {
				t.Errorf("no %s marker in %q", Marker(c.kind), got)
			}
			if n < 1 {
				t.Errorf("count = %d", n)
			}
			for _, k := range c.keep {
				if !strings.Contains(got, k) {
					t.Errorf("surrounding text %q lost: %q", k, got)
				}
			}
			again, n2 := r.Redact(got)
			if again != got || n2 != 0 {
				t.Errorf("not idempotent: %q (%d) -> %q", got, n2, again)
			}
		})
	}
}

// nonSecrets are strings a task needs that look a little like secrets: none may be
// redacted.
var nonSecrets = []string{
	"commit 9fceb02d0ae598e95dc970b74767f19372d61af8 and 3f1e2a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f",
	"uuid 123e4567-e89b-12d3-a456-426614174000 / 550E8400-E29B-41D4-A716-446655440000",
	"image sha256:3739671ad08541e759230997bf0e50dcb8059d05ef4c64c23bbb9a37a0829f24 pulled",
	"digest: sha512-Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy",
	"task W1234567, reservation ZQ9XYZ, user mia_li_3668, color #A1B2C3, order #W8732376",
	"Paid $1,234.56 on 2024-05-15T10:30:00Z; refund 45.00 EUR by 05/16/2024.",
	"/usr/local/lib/python3.11/site-packages/marshmallow/fields.py:1474 and ./src/app/main.go",
	"C:\\Program Files\\App\\config.json and ~/.config/memctl/config.yaml",
	"https://example.com/path/to/page?query=1&sort=desc#section and http://localhost:8080/api/v1/health",
	"git@github.com:org/repo.git and ssh://git@example.com:2222/repo.git",
	"postgres://db.internal:5432/orders (no credentials) and redis://cache:6379/0",
	"The user's password must be reset; the password policy requires 12 characters.",
	"Enter your password: ",
	"token_type: bearer, expires_in: 3600, max_tokens: 4096, total_tokens=1290",
	"bypass=true compass: north oauth: enabled boarding_pass: printed first_pass=done",
	"config=debug design: flat signature_version: v4",
	"session: morning, training_session: 3",
	`{"credentials": "include", "mode": "cors"}`,
	"docker run -u 1000:1000 -p 8080:80 image",
	"ls -la /tmp && grep -p pattern file.txt && tar -a -cf x.tar.gz dir",
	"git log --author=me --since=2024-01-01 --format=%H",
	"call_7MqMjJMaXLRTpdPdzCjzjfpE and toolu_01A09q90qw90lq917835lq9",
	"AbstractSingletonProxyFactoryBean2Helper is a Java class name",
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
	"The flight HAT136 leaves at 11:00 AM; seat 12A; gate B42; PNR 4OG6T3.",
	"omar.davis7857@example.com and +1-555-0100",
	"key: value, key_id: 42, monkey=3, sort_key: name, primary_key: id",
	"Authorization header is required; Authorization: Bearer <token>",
	"password: ${DB_PASSWORD}\napi_key: <your-api-key>\nPASSWORD=****\ntoken: {{ secrets.TOKEN }}",
	// Counters, ids and prose near secret words.
	"pass: 97 tests, fail: 3\npass: 12, skip: 0",
	`{"etag": "wZeA5jbsBXA3hcMNWcyTLvJ47rGpctaegMIc8mAs", "commit_sha": "Qm9iOkxhbXAyMDI0X3NlY3JldAbcDEfGh1234567"}`,
	"the password is incorrect; the API key is invalid; the token count is 4096",
	"the password field is required and the password reset link expired",
	"users identified by the team, and the issue was identified by QA",
	"net use is deprecated; use the net user command to list accounts",
	"password:\n  min_length: 12\n  require_digit: true",
	"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\nRTESMBAGA1UEChMJQmFsdGltb3JlMRMwEQYDVQQLEwpDeWJlclRydXN0MSIwIAYD\nVQQDExlCYWx0aW1vcmUgQ3liZXJUcnVzdCBSb290MB4XDTAwMDUxMjE4NDYwMFoX\n-----END CERTIFICATE-----",
	"aGVsbG8gd29ybGQgaG93IGFyZSB5b3U= and aHR0cHM6Ly9leGFtcGxlLmNvbS9wYXRo",
	"curl -u bob https://x.example.com && docker run --user 1000:1000 app; ls -p x",
}

func TestNonSecretsSurvive(t *testing.T) {
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range nonSecrets {
		if got, n := r.Redact(text); n != 0 || got != text {
			t.Errorf("redacted a non-secret (%d):\n in: %q\nout: %q", n, text, got)
		}
	}
}

// FuzzPlantedSecrets embeds a planted secret in random surrounding text: it must never
// survive, and redaction stays idempotent.
func FuzzPlantedSecrets(f *testing.F) {
	for i := range plantedCases {
		f.Add(uint16(i), "prefix ", " suffix")
	}
	f.Add(uint16(3), "", "")
	f.Add(uint16(7), "{\"a\": ", "}")
	r, err := New(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, i uint16, before, after string) {
		c := plantedCases[int(i)%len(plantedCases)]
		// Separate the case from the random text, as any real text does.
		text := before + "\n" + c.text + "\n" + after
		once, _ := r.Redact(text)
		if strings.Contains(once, c.secret) {
			t.Fatalf("%s: secret survived in %q -> %q", c.name, text, once)
		}
		if twice, n := r.Redact(once); n != 0 || twice != once {
			t.Fatalf("not idempotent: %q -> %q (%d)", once, twice, n)
		}
	})
}
