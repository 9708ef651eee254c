/**
 * A proto enum between its numbers and the domain's names, both ways, from one table written once (name →
 * number, so that the type checker sees every name has its number). A number the table does not name
 * (UNSPECIFIED, or one this build does not know) reads as undefined: the caller reports it as a violation.
 */
export interface EnumNames<Name extends string, Value extends number> {
  readonly nameOf: (value: Value) => Name | undefined;
  readonly valueOf: (name: Name) => Value;
}

export function enumNames<Name extends string, Value extends number>(
  valueByName: Readonly<Record<Name, Value>>,
): EnumNames<Name, Value> {
  const nameByValue = new Map<Value, Name>(
    (Object.entries(valueByName) as [Name, Value][]).map(([name, value]) => [value, name]),
  );
  return { nameOf: (value) => nameByValue.get(value), valueOf: (name) => valueByName[name] };
}
