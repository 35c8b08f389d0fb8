{{/* The name of every object of the release. */}}
{{- define "dgd-operator.fullname" -}}
{{- .Values.fullnameOverride | default .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels of every object, and the pods' selector. */}}
{{- define "dgd-operator.labels" -}}
app.kubernetes.io/name: dgd-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The namespaces watched in namespace-restricted mode, in order, as a JSON list (read it with
fromJsonArray); empty in cluster-wide mode. Rendering fails unless each is a namespace name, listed once. */}}
{{- define "dgd-operator.namespaces" -}}
{{- $namespaces := .Values.namespaces | default (list) -}}
{{- if not (kindIs "slice" $namespaces) -}}
{{- fail (printf "namespaces: %s is not a list: give a list of namespace names, or [] to watch every namespace" (toJson $namespaces)) -}}
{{- end -}}
{{- range $index, $namespace := $namespaces -}}
{{- if not (and (kindIs "string" $namespace) (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" (toString $namespace))) -}}
{{- fail (printf "namespaces[%d]: %s is not a namespace name: 1 to 63 lowercase letters, digits or '-', starting and ending with a letter or digit ([] watches every namespace)" $index (toJson $namespace)) -}}
{{- end -}}
{{- if has $namespace (slice $namespaces 0 $index) -}}
{{- fail (printf "namespaces[%d]: %s is listed twice: list each watched namespace once" $index (toJson $namespace)) -}}
{{- end -}}
{{- end -}}
{{- toJson $namespaces -}}
{{- end -}}

{{/* The first watched namespace: the restricted-mode switch of the operator's configuration
(namespace.restricted) and where the MPI key Secret lives; empty in cluster-wide mode. */}}
{{- define "dgd-operator.restricted" -}}
{{- include "dgd-operator.namespaces" . | fromJsonArray | first | default "" -}}
{{- end -}}

{{/* The rules of the operator's own API calls (deploy/generate.py: OPERATOR_RULES and the gates). */}}
{{- define "dgd-operator.rules" -}}
- apiGroups: [nvidia.com]
  resources: [dynamographdeployments]
  verbs: [get, list, watch, update, patch]
- apiGroups: [nvidia.com]
  resources: [dynamographdeployments/status]
  verbs: [patch]
- apiGroups: [nvidia.com]
  resources: [dynamographdeploymentscalingadapters]
  verbs: [create, get, list, watch, patch, delete]
- apiGroups: [nvidia.com]
  resources: [dynamographdeploymentscalingadapters/status]
  verbs: [patch]
- apiGroups: [nvidia.com]
  resources: [dynamocomponentdeployments]
  verbs: [create, get, list, watch, patch, delete]
- apiGroups: [nvidia.com]
  resources: [dynamocomponentdeployments/status]
  verbs: [patch]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [create, get, list, watch, patch]
{{- if not .Values.featureGates.checkpoint }}
- apiGroups: [nvidia.com]
  resources: [dynamocheckpoints]
  verbs: [list]
{{- end }}
- apiGroups: [""]
  resources: [services]
  verbs: [create, get, list, watch, patch, delete]
- apiGroups: [networking.k8s.io]
  resources: [ingresses]
  verbs: [create, get, list, watch, patch, delete]
- apiGroups: [networking.istio.io]
  resources: [virtualservices]
  verbs: [create, get, list, patch, delete]
- apiGroups: [""]
  resources: [configmaps, serviceaccounts]
  verbs: [create, get, list, watch, patch]
- apiGroups: [""]
  resources: [persistentvolumeclaims, secrets]
  verbs: [create, get]
- apiGroups: [""]
  resources: [pods]
  verbs: [list, watch]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [roles]
  verbs: [create, get, list, watch, patch]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [rolebindings]
  verbs: [create, get, list, watch, patch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [inference.networking.k8s.io]
  resources: [inferencepools]
  verbs: [create, get, patch]
- apiGroups: [networking.istio.io]
  resources: [destinationrules]
  verbs: [create, get, list, watch, patch, delete]
- apiGroups: [resource.k8s.io]
  resources: [resourceclaimtemplates]
  verbs: [create, get, list, watch, patch, delete]
{{- if eq (toString .Values.featureGates.grove) "false" }}
- apiGroups: [grove.io]
  resources: [podcliquesets]
  verbs: [list]
{{- else }}
- apiGroups: [grove.io]
  resources: [podcliquesets]
  verbs: [create, get, list, watch, patch]
- apiGroups: [grove.io]
  resources: [podcliques, podcliquescalinggroups]
  verbs: [list, watch]
- apiGroups: [grove.io]
  resources: [podcliques/scale, podcliquescalinggroups/scale]
  verbs: [get, update]
{{- end }}
{{- if .Values.featureGates.checkpoint }}
- apiGroups: [nvidia.com]
  resources: [dynamocheckpoints]
  verbs: [create, get, list, watch, patch, delete]
{{- end }}
{{- if not (include "dgd-operator.restricted" .) }}
- apiGroups: [rbac.authorization.k8s.io]
  resources: [rolebindings]
  verbs: [update, delete]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [clusterroles]
  resourceNames: [{{ include "dgd-operator.fullname" . }}-planner, {{ include "dgd-operator.fullname" . }}-epp]
  verbs: [get]
{{- if ne (toString .Values.featureGates.grove) "false" }}
- apiGroups: [grove.io]
  resources: [clustertopologybindings]
  verbs: [get]
{{- end }}
- apiGroups: [resource.k8s.io]
  resources: [deviceclasses]
  verbs: [get]
{{- end }}
{{- end -}}

{{/* What the operator hands out: the discovery Role of every graph (and the planner's and EPP's ClusterRoles). */}}
{{- define "dgd-operator.delegatedRules" -}}
- apiGroups: [""]
  resources: [endpoints, pods]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [nvidia.com]
  resources: [dynamoworkermetadatas]
  verbs: [create, get, list, watch, update, patch, delete]
{{- if not (include "dgd-operator.restricted" .) }}
- apiGroups: [rbac.authorization.k8s.io]
  resources: [clusterroles]
  resourceNames: [{{ include "dgd-operator.fullname" . }}-planner, {{ include "dgd-operator.fullname" . }}-epp]
  verbs: [bind]
{{- end }}
{{- end -}}

{{/* The planner's permissions (supplement §2.3). */}}
{{- define "dgd-operator.plannerRules" -}}
- apiGroups: [nvidia.com]
  resources: [dynamographdeployments]
  verbs: [get, list, create, update, patch]
- apiGroups: [nvidia.com]
  resources: [dynamographdeploymentscalingadapters/scale]
  verbs: [patch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [nvidia.com]
  resources: [dynamoworkermetadatas]
  verbs: [get, list, watch, create, update, patch, delete]
{{- end -}}

{{/* The webhooks' Service, and the Secret of their serving certificate (the operator's own, or cert-manager's). */}}
{{- define "dgd-operator.webhookService" -}}
{{- include "dgd-operator.fullname" . }}-webhook-service
{{- end -}}

{{- define "dgd-operator.webhookSecret" -}}
{{- include "dgd-operator.fullname" . }}-webhook-server-cert
{{- end -}}

{{/* What the API server does with a write while no replica answers the webhooks; rendering fails on
anything but Fail or Ignore. */}}
{{- define "dgd-operator.failurePolicy" -}}
{{- $policy := .Values.webhook.failurePolicy -}}
{{- if not (has $policy (list "Fail" "Ignore")) -}}
{{- fail (printf "webhook.failurePolicy: %s is not Fail or Ignore: Fail refuses DGD, DCD and DynamoCheckpoint writes while no replica answers the webhooks, Ignore admits them unchecked" (toJson $policy)) -}}
{{- end -}}
{{- $policy -}}
{{- end -}}

{{/* The endpoint picker's permissions (supplement §2.3); restricted, without the two cluster-scoped reviews. */}}
{{- define "dgd-operator.eppRules" -}}
- apiGroups: [inference.networking.x-k8s.io]
  resources: [inferencepools, inferenceobjectives, inferencemodelrewrites]
  verbs: [get, list, watch]
- apiGroups: [inference.networking.k8s.io]
  resources: [inferencepools]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [nvidia.com]
  resources: [dynamoworkermetadatas]
  verbs: [get, list, watch, create, update, patch, delete]
{{- if not (include "dgd-operator.restricted" .) }}
- apiGroups: [authentication.k8s.io]
  resources: [tokenreviews]
  verbs: [create]
- apiGroups: [authorization.k8s.io]
  resources: [subjectaccessreviews]
  verbs: [create]
{{- end }}
{{- end -}}

{{/* Whether the metrics are served securely ("true" or "false"); rendering fails unless metrics.secure is a boolean. */}}
{{- define "dgd-operator.metricsSecure" -}}
{{- $secure := .Values.metrics.secure -}}
{{- if not (kindIs "bool" $secure) -}}
{{- fail (printf "metrics.secure: %s is not true or false: true serves /metrics over HTTPS to authorised scrapers only, false over plain HTTP to anyone" (toJson $secure)) -}}
{{- end -}}
{{- $secure -}}
{{- end -}}

{{/* A Secret the metrics certificate is mounted from (empty: each replica's own; none over plain HTTP). */}}
{{- define "dgd-operator.metricsCertSecret" -}}
{{- if eq (include "dgd-operator.metricsSecure" .) "true" -}}
{{- .Values.metrics.certSecret | default "" -}}
{{- end -}}
{{- end -}}
