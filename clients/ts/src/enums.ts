/**
 * Enum values by their lower-case names, as the Python client spells them: "fact" for
 * `MEMORY_KIND_FACT`, "image" for `MODALITY_IMAGE`.
 */

/**
 * The lower-case names of a generated enum's values, less `Prefix`:
 * `EnumName<typeof Tier, "TIER_">` is `"unspecified" | "hot" | "warm" | "cold"`.
 */
export type EnumName<E, Prefix extends string> = {
  [K in keyof E]: K extends `${Prefix}${infer Rest}` ? Lowercase<Rest> : never;
}[keyof E];

/** The value named `name` (or `name` itself when a number) of a generated enum. */
export function enumValue(e: object, prefix: string, name: string | number): number {
  if (typeof name === "number") return name;
  const value: unknown = (e as Record<string, unknown>)[prefix + name.toUpperCase()];
  if (typeof value !== "number") {
    const known = Object.keys(e)
      .filter((k) => k.startsWith(prefix))
      .map((k) => k.slice(prefix.length).toLowerCase());
    throw new RangeError(`${JSON.stringify(name)}: expected one of ${known.join(", ")}`);
  }
  return value;
}

/** The lower-case name of a generated enum's `value` (its number, as text, when unknown). */
export function enumName(e: object, prefix: string, value: number): string {
  const key: unknown = (e as Record<number, unknown>)[value];
  return typeof key === "string" && key.startsWith(prefix)
    ? key.slice(prefix.length).toLowerCase()
    : String(value);
}
