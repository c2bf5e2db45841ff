/**
 * The node server's questions to the API server, with the node's own credentials: TokenReview
 * (who holds this bearer token?) and SubjectAccessReview (may this user do this to this node?).
 * The Node authorizer allows a node both creates (its NodeRules); the chart's ServiceAccount has
 * them in its ClusterRole.
 */
import type { KubeClient } from '../kube/client.js';
import { AuthenticationV1Client, AuthorizationV1Client } from '../kube/groups.js';
import type { TokenReviewer, UserInfo } from './authn.js';
import type { AccessReviewer, NodeAccess } from './authz.js';

/** TokenReview through `kube`. */
export function apiTokenReviewer(kube: KubeClient): TokenReviewer {
  const api = new AuthenticationV1Client(kube);
  return {
    async review(token: string): Promise<UserInfo | undefined> {
      const review = await api.createTokenReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } } });
      const status = review.status;
      const name = status?.user?.username ?? '';
      if (status?.authenticated !== true || name === '') return undefined;
      const user = status.user;
      return { name, groups: user?.groups ?? [], ...(user?.uid === undefined ? {} : { uid: user.uid }), ...(user?.extra === undefined ? {} : { extra: user.extra }) };
    },
  };
}

/** SubjectAccessReview through `kube`, for `nodes/<subresource>` in the core group, v1. */
export function apiAccessReviewer(kube: KubeClient): AccessReviewer {
  const api = new AuthorizationV1Client(kube);
  return {
    async allowed(access: NodeAccess): Promise<boolean> {
      const { user } = access;
      const review = await api.createSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: user.name,
            groups: [...user.groups],
            ...(user.uid === undefined ? {} : { uid: user.uid }),
            ...(user.extra === undefined ? {} : { extra: Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]])) }),
            resourceAttributes: { verb: access.verb, group: '', version: 'v1', resource: 'nodes', subresource: access.subresource, name: access.node },
          },
        },
      });
      return review.status?.allowed === true;
    },
  };
}
