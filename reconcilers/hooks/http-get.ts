/**
 * One HTTP(S) GET for an httpGet lifecycle hook: resolves with the response's status code once the
 * body is read (and discarded), rejects on a transport error, on `timeoutMs` of silence, or when
 * `signal` aborts (the request is destroyed). HTTPS does not verify the certificate, as the
 * kubelet's lifecycle client does not. Redirects are not followed: the first answer is the answer.
 */
import http from 'node:http';
import https from 'node:https';

export interface HttpGetRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

/** The request stayed silent for its whole timeout. */
export class HttpHookTimeoutError extends Error {
  override readonly name = 'HttpHookTimeoutError';
}

export function httpGet(request: HttpGetRequest): Promise<number> {
  const client = request.url.startsWith('https:') ? https : http;
  return new Promise<number>((resolve, reject) => {
    const options = { headers: { ...request.headers }, timeout: request.timeoutMs, rejectUnauthorized: false, ...(request.signal === undefined ? {} : { signal: request.signal }) };
    const req = client.get(request.url, options, (response) => {
      response.on('error', reject);
      response.on('end', () => {
        resolve(response.statusCode ?? 0);
      });
      // The body is not needed; reading it lets the response end.
      response.resume();
    });
    req.on('timeout', () => {
      req.destroy(new HttpHookTimeoutError(`context deadline exceeded (Client.Timeout exceeded while awaiting headers) after ${request.timeoutMs} ms`));
    });
    req.on('error', reject);
  });
}
