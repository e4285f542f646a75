/**
 * Bad client-supplied media or reference. The HTTP layer maps it to 400 `invalid_request_error` with
 * `param` set to the request field that carried the media (e.g. "image_reference[0].image_url").
 */
export class InvalidMediaError extends Error {
  override readonly name = "InvalidMediaError";

  constructor(
    message: string,
    readonly param: string,
  ) {
    super(message);
  }
}
