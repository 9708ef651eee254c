/** One problem with a request or a record: the field at fault (when there is one) and what is wrong. */
export interface Violation {
  /** The request field at fault, by its JSON name (e.g. "numUsers", "wagers[3]"). */
  readonly field?: string;
  readonly message: string;
}
