/** A refusal in OAuth's own terms (RFC 6749 5.2, RFC 8707): the HTTP side answers it in the protocol's shape. */
export class OauthRefusal extends Error {
  override name = 'OauthRefusal';
  constructor(
    readonly code:
      | 'invalid_request'
      | 'invalid_grant'
      | 'invalid_target'
      | 'invalid_scope'
      | 'invalid_client'
      | 'temporarily_unavailable',
    message: string,
  ) {
    super(message);
  }
}
