/** The column titles of a table. */
export function TableHead({ titles }: { titles: readonly string[] }) {
  return (
    <thead>
      <tr>
        {titles.map((title) => (
          <th scope="col" key={title}>
            {title}
          </th>
        ))}
      </tr>
    </thead>
  );
}

/** What went wrong, each in an alert; nothing when all is well. */
export function Problems({ texts }: { texts: readonly (string | undefined)[] }) {
  return (
    <>
      {texts
        .filter((text): text is string => text !== undefined)
        .map((text) => (
          <p class="error" role="alert" key={text}>
            {text}
          </p>
        ))}
    </>
  );
}
