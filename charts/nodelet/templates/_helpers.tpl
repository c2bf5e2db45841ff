{{/* Names, labels and the few values several templates derive the same way. */}}

{{- define "nodelet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object name; 40 characters leave room for suffixes like "-dashboard-auth". */}}
{{- define "nodelet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "nodelet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object; `component` is added per object. */}}
{{- define "nodelet.labels" -}}
helm.sh/chart: {{ include "nodelet.chart" . }}
{{ include "nodelet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: nodelet
{{- end }}

{{- define "nodelet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodelet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "nodelet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nodelet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "nodelet.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* True (non-empty) when the chart runs nodelet's own containerd next to the agent. */}}
{{- define "nodelet.ownRuntime" -}}
{{- if not .Values.runtime.socket }}true{{ end }}
{{- end }}

{{/* The CRI socket the agent dials, as a path. */}}
{{- define "nodelet.criSocket" -}}
{{- if .Values.runtime.socket }}
{{- .Values.runtime.socket }}
{{- else }}
{{- printf "%s/containerd.sock" (trimSuffix "/" .Values.runtime.containerd.stateDir) }}
{{- end }}
{{- end }}

{{/* The node's labels: the configured ones plus nodelet.dev/agent=true, which nothing may remove. */}}
{{- define "nodelet.nodeLabels" -}}
{{- $labels := merge (dict "nodelet.dev/agent" "true") (deepCopy .Values.node.labels) }}
{{- $items := list }}
{{- range $key, $value := $labels }}
{{- $items = append $items (printf "%s=%s" $key $value) }}
{{- end }}
{{- join "," $items }}
{{- end }}

{{/* --register-with-taints value: key=value:Effect or key:Effect, comma-separated. */}}
{{- define "nodelet.nodeTaints" -}}
{{- $items := list }}
{{- range .Values.node.taints }}
{{- if hasKey . "value" }}
{{- $items = append $items (printf "%s=%s:%s" .key .value .effect) }}
{{- else }}
{{- $items = append $items (printf "%s:%s" .key .effect) }}
{{- end }}
{{- end }}
{{- join "," $items }}
{{- end }}

{{- define "nodelet.redisName" -}}
{{- printf "%s-redis" (include "nodelet.fullname" .) }}
{{- end }}

{{/*
The Redis URL without credentials: the internal Service, the node's own loopback Redis (sidecar),
a placeholder whose host ioredis ignores (sentinel: the sentinels name the master), or the external
url (rediss:// when tls).
*/}}
{{- define "nodelet.redisBaseUrl" -}}
{{- if eq .Values.redis.mode "internal" }}
{{- printf "%s://%s.%s.svc:6379" (ternary "rediss" "redis" .Values.redis.tls) (include "nodelet.redisName" .) .Release.Namespace }}
{{- else if eq .Values.redis.mode "sidecar" }}
{{- printf "redis://127.0.0.1:%d" (int .Values.redis.sidecar.port) }}
{{- else if eq .Values.redis.mode "sentinel" }}
{{- print "redis://sentinel-master" }}
{{- else if eq .Values.redis.mode "cluster" }}
{{- printf "%s://redis-cluster" (ternary "rediss" "redis" .Values.redis.tls) }}
{{- else }}
{{- $url := required "redis.url is required when redis.mode is external" .Values.redis.url }}
{{- if and .Values.redis.tls (hasPrefix "redis://" $url) }}
{{- $url = printf "rediss://%s" (trimPrefix "redis://" $url) }}
{{- end }}
{{- $url }}
{{- end }}
{{- end }}

{{/*
Environment that gives a container REDIS_URL: with an external password, REDIS_PASSWORD comes from
the Secret and the URL embeds it through Kubernetes' $(VAR) expansion, so it never appears in the
pod spec.
*/}}
{{- define "nodelet.redisEnv" -}}
{{- $base := include "nodelet.redisBaseUrl" . }}
{{- include "nodelet.redisTlsCaEnv" . }}
{{- if eq .Values.redis.mode "sentinel" }}
{{- if not .Values.redis.sentinel.sentinels }}
{{- fail "redis.sentinel.sentinels is required when redis.mode is sentinel" }}
{{- end }}
- name: REDIS_SENTINELS
  value: {{ join "," .Values.redis.sentinel.sentinels | quote }}
- name: REDIS_SENTINEL_MASTER
  value: {{ .Values.redis.sentinel.masterName | quote }}
{{- end }}
{{- if eq .Values.redis.mode "cluster" }}
- name: REDIS_CLUSTER_NODES
  value: {{ include "nodelet.redisClusterNodes" . | quote }}
{{- end }}
{{- if or (and (has .Values.redis.mode (list "external" "sentinel" "cluster")) .Values.redis.password.existingSecret) (include "nodelet.redisClusterInternal" .) }}
{{- $scheme := ternary "rediss://" "redis://" (hasPrefix "rediss://" $base) }}
{{- $rest := trimPrefix $scheme $base }}
{{- if contains "@" $rest }}
{{- fail "redis.url must not contain credentials when redis.password.existingSecret is set" }}
{{- end }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      {{- if include "nodelet.redisClusterInternal" . }}
      # The chart's Redis Cluster: the one password of agents and dashboard (no node users on a cluster).
      name: {{ include "nodelet.redisName" . }}-auth
      key: password
      {{- else }}
      name: {{ .Values.redis.password.existingSecret }}
      key: {{ .Values.redis.password.key }}
      {{- end }}
- name: REDIS_URL
  value: {{ printf "%s:$(REDIS_PASSWORD)@%s" $scheme $rest | quote }}
{{- else }}
- name: REDIS_URL
  value: {{ $base | quote }}
{{- end }}
{{- end }}

{{/*
The dashboard's REDIS_URL: with node users (internal mode, or external with redis.nodeUsers) as
its own Redis user (nodelet-dashboard, kept by redis-users), the password from the release's Secret
through $(VAR) expansion; otherwise as the agents reach Redis.
*/}}
{{- define "nodelet.dashboardRedisEnv" -}}
{{- if include "nodelet.redisNodeUsers" . }}
{{- include "nodelet.redisTlsCaEnv" . }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "nodelet.redisName" . }}-auth
      key: dashboard-password
- name: REDIS_URL
  {{- $base := include "nodelet.redisBaseUrl" . }}
  {{- $scheme := ternary "rediss://" "redis://" (hasPrefix "rediss://" $base) }}
  value: {{ printf "%snodelet-dashboard:$(REDIS_PASSWORD)@%s" $scheme (trimPrefix $scheme $base) | quote }}
{{- else }}
{{- include "nodelet.redisEnv" . }}
{{- end }}
{{- end }}

{{- define "nodelet.dashboardAuthSecretName" -}}
{{- default (printf "%s-dashboard-auth" (include "nodelet.fullname" .)) .Values.dashboard.auth.existingSecret }}
{{- end }}

{{/*
The agent's affinity: agent.affinity with "nodelet.dev/agent DoesNotExist" in every required node
selector term (a single term with only that rule when there is none).
*/}}
{{- define "nodelet.agentAffinity" -}}
{{- $affinity := deepCopy .Values.agent.affinity }}
{{- $guard := dict "key" "nodelet.dev/agent" "operator" "DoesNotExist" }}
{{- $nodeAffinity := default (dict) $affinity.nodeAffinity }}
{{- $required := default (dict) (get $nodeAffinity "requiredDuringSchedulingIgnoredDuringExecution") }}
{{- $terms := list }}
{{- range (default (list) (get $required "nodeSelectorTerms")) }}
{{- $term := deepCopy . }}
{{- $_ := set $term "matchExpressions" (append (default (list) (get $term "matchExpressions")) $guard) }}
{{- $terms = append $terms $term }}
{{- end }}
{{- if not $terms }}
{{- $terms = list (dict "matchExpressions" (list $guard)) }}
{{- end }}
{{- $_ := set $required "nodeSelectorTerms" $terms }}
{{- $_ = set $nodeAffinity "requiredDuringSchedulingIgnoredDuringExecution" $required }}
{{- $_ = set $affinity "nodeAffinity" $nodeAffinity }}
{{- toYaml $affinity }}
{{- end }}

{{/* A resource map as the kubelet's --system-reserved/--kube-reserved list: cpu=100m,memory=500Mi (sorted keys). */}}
{{- define "nodelet.resourceList" -}}
{{- $pairs := list -}}
{{- range $name, $quantity := . -}}
{{- $pairs = append $pairs (printf "%s=%v" $name $quantity) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end }}

{{/* The runtime ConfigMap's key of one registry's hosts.toml (a key may not contain ":"). */}}
{{- define "nodelet.registryHostsKey" -}}
{{- printf "hosts.%s.toml" (replace ":" "_" .) }}
{{- end }}

{{/*
Fails the install when another release's nodelet agent DaemonSet exists (any namespace): on a host
both would register the same "<host><nameSuffix>" Node and share its host directories, containerd
state, CNI bridge and node server port, each tearing down what the other runs. Only against a
cluster: `helm template` has no cluster to look in (lookup returns nothing there).
*/}}
{{- define "nodelet.refuseSecondRelease" -}}
{{- range (lookup "apps/v1" "DaemonSet" "" "").items }}
{{- $labels := default (dict) .metadata.labels }}
{{- if and (eq (get $labels "app.kubernetes.io/part-of") "nodelet") (eq (get $labels "app.kubernetes.io/component") "agent") }}
{{- if not (and (eq .metadata.namespace $.Release.Namespace) (eq (get $labels "app.kubernetes.io/instance") $.Release.Name)) }}
{{- fail (printf "nodelet is already installed on this cluster (release %q in namespace %q): a second agent would register the same Nodes and share their host directories, containerd and network; upgrade or uninstall that release instead" (get $labels "app.kubernetes.io/instance") .metadata.namespace) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
"true" when the chart runs the Redis Cluster itself (redis.mode cluster without redis.cluster.nodes).
Refuses what it does not offer: TLS and the NetworkPolicy (for an existing cluster, redis.tls is
rediss://).
*/}}
{{- define "nodelet.redisClusterInternal" -}}
{{- if and (eq .Values.redis.mode "cluster") (not .Values.redis.cluster.nodes) }}
{{- if .Values.redis.tls }}
{{- fail "redis.tls is not offered for the chart's own Redis Cluster (redis.mode cluster without redis.cluster.nodes); an existing cluster with TLS: redis.cluster.nodes and redis.tls" }}
{{- end }}
{{- if .Values.redis.networkPolicy.enabled }}
{{- fail "redis.networkPolicy is not offered for the chart's own Redis Cluster yet" }}
{{- end }}
{{- if .Values.redis.password.existingSecret }}
{{- fail "redis.password.existingSecret is for an existing cluster (redis.cluster.nodes): the chart's own cluster has a generated password" }}
{{- end }}
{{- true }}
{{- end }}
{{- end }}

{{/* The pod security context of the chart's Redis Cluster: the official image's redis user, or nobody with the nodelet image's redis-server. */}}
{{- define "nodelet.redisClusterPodSecurity" -}}
{{- $id := ternary 999 65534 (not (empty .Values.redis.image.repository)) }}
runAsUser: {{ $id }}
runAsGroup: {{ $id }}
fsGroup: {{ $id }}
runAsNonRoot: true
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The chart's Redis Cluster: its pods, primaries and replicas. */}}
{{- define "nodelet.redisClusterPods" -}}
{{- mul (int .Values.redis.cluster.shards) (add1 (int .Values.redis.cluster.replicasPerShard)) }}
{{- end }}

{{/*
REDIS_CLUSTER_NODES: the existing cluster's redis.cluster.nodes, or every pod of the chart's cluster
by its stable DNS name (the headless Service); the client asks one for the slot map, which names the
nodes by the IPs they announce (their pod IPs).
*/}}
{{- define "nodelet.redisClusterNodes" -}}
{{- if .Values.redis.cluster.nodes }}
{{- join "," .Values.redis.cluster.nodes }}
{{- else }}
{{- $name := include "nodelet.redisName" . }}
{{- $nodes := list }}
{{- range $i := until (int (include "nodelet.redisClusterPods" .)) }}
{{- $nodes = append $nodes (printf "%s-%d.%s.%s.svc:6379" $name $i $name $.Release.Namespace) }}
{{- end }}
{{- join "," $nodes }}
{{- end }}
{{- end }}

{{/* Whether the internal Redis serves TLS only (redis.mode internal with redis.tls). */}}
{{- define "nodelet.redisInternalTls" -}}
{{- if and (eq .Values.redis.mode "internal") .Values.redis.tls }}true{{- end }}
{{- end }}

{{/* The Secret with the internal Redis' tls.crt, tls.key and ca.crt: the operator's, or the chart's own. */}}
{{- define "nodelet.redisTlsSecretName" -}}
{{- default (printf "%s-tls" (include "nodelet.redisName" .)) .Values.redis.tlsSecret }}
{{- end }}

{{/*
A client of the internal Redis over TLS trusts its CA: Node.js reads NODE_EXTRA_CA_CERTS at start
(ioredis uses Node's TLS), from the CA-only mount below.
*/}}
{{- define "nodelet.redisTlsCaEnv" -}}
{{- if include "nodelet.redisInternalTls" . }}
- name: NODE_EXTRA_CA_CERTS
  value: /etc/nodelet-redis-ca/ca.crt
{{- end }}
{{- end }}

{{- define "nodelet.redisTlsCaMount" -}}
{{- if include "nodelet.redisInternalTls" . }}
# The internal Redis' CA, to verify its certificate (never its key).
- name: redis-ca
  mountPath: /etc/nodelet-redis-ca
  readOnly: true
{{- end }}
{{- end }}

{{- define "nodelet.redisTlsCaVolume" -}}
{{- if include "nodelet.redisInternalTls" . }}
- name: redis-ca
  secret:
    secretName: {{ include "nodelet.redisTlsSecretName" . }}
    items:
      - key: ca.crt
        path: ca.crt
{{- end }}
{{- end }}

{{/*
"true" when each node has a Redis user of its own (queue-users/, `nodelet redis-users`): always in
internal mode; in external mode with redis.nodeUsers.adminSecret. Refuses what cannot work: sentinel
mode (Redis does not replicate ACL users: a failover would leave the new primary without them) and
a shared password beside the nodes' own users.
*/}}
{{- define "nodelet.redisNodeUsers" -}}
{{- $mode := .Values.redis.mode }}
{{- $admin := .Values.redis.nodeUsers.adminSecret }}
{{- if and $admin (eq $mode "cluster") }}
{{- fail "redis.nodeUsers.adminSecret cannot work in cluster mode: ACL users live in each Redis process of a cluster, so agents and dashboard share one password there" }}
{{- else if and $admin (eq $mode "sentinel") }}
{{- fail "redis.nodeUsers.adminSecret cannot work in sentinel mode: Redis does not replicate ACL users, so a failover would leave the new primary without them" }}
{{- else if and $admin (not (eq $mode "external")) }}
{{- fail (printf "redis.nodeUsers.adminSecret is for redis.mode external, not %s (%s)" $mode (ternary "internal mode has node users always" "each node has a Redis of its own" (eq $mode "internal"))) }}
{{- end }}
{{- if and $admin .Values.redis.password.existingSecret }}
{{- fail "redis.password.existingSecret and redis.nodeUsers.adminSecret exclude each other: with node users every agent authenticates as its own node" }}
{{- end }}
{{- if or (eq $mode "internal") $admin }}true{{- end }}
{{- end }}

{{/*
The redis-users container (queue-users/): keeps one Redis user per Node (from the password hash on
the Node) and the dashboard's, with the admin's credentials in REDIS_ADMIN_PASSWORD (and
REDIS_ADMIN_USERNAME in external mode). dict: root (the chart's context), url (the admin's Redis URL,
with $(VAR) references), env (extra env entries, a list).
*/}}
{{- define "nodelet.redisUsersContainer" -}}
{{- $root := .root }}
- name: redis-users
  image: {{ include "nodelet.image" $root }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  args:
    - redis-users
    - --redis-url={{ .url }}
    - --log-level={{ $root.Values.agent.logLevel }}
    {{- if $root.Values.dashboard.allowActions }}
    - --dashboard-allow-actions
    {{- end }}
  env:
    {{- with include "nodelet.redisTlsCaEnv" $root }}{{- . | nindent 4 }}{{- end }}
    {{- with .env }}{{- toYaml . | nindent 4 }}{{- end }}
    {{- if $root.Values.dashboard.enabled }}
    - name: NODELET_DASHBOARD_REDIS_PASSWORD
      valueFrom:
        secretKeyRef:
          name: {{ include "nodelet.redisName" $root }}-auth
          key: dashboard-password
    {{- end }}
  securityContext:
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: [ALL]
  resources:
    {{- toYaml $root.Values.redis.nodeUsers.resources | nindent 4 }}
  volumeMounts:
    - name: api-token
      mountPath: /var/run/secrets/kubernetes.io/serviceaccount
      readOnly: true
    {{- with include "nodelet.redisTlsCaMount" $root }}{{- . | nindent 4 }}{{- end }}
{{- end }}

{{/* The projected API token of redis-users: its only API credential (the pod mounts no other). */}}
{{- define "nodelet.redisUsersTokenVolume" -}}
- name: api-token
  projected:
    sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: 3600
      - configMap:
          name: kube-root-ca.crt
          items:
            - key: ca.crt
              path: ca.crt
      - downwardAPI:
          items:
            - path: namespace
              fieldRef:
                fieldPath: metadata.namespace
{{- end }}

{{/*
"true" when graceful node shutdown is on (a shutdown grace period other than zero), else empty.
*/}}
{{- define "nodelet.gracefulShutdown" -}}
{{- $period := .Values.agent.gracefulShutdown.shutdownGracePeriod | default "0s" -}}
{{- if not (has $period (list "0" "0s" "0m" "0h" "0ms")) -}}true{{- end -}}
{{- end -}}
