// The two routes the HTTP benchmarks measure (bench/http-server.mjs and
// bench/hook-cost-server.mjs serve both): the allowed request each round
// sends (3-segment paths), and the traversal that validation expects denied.

const json = (value) => ({
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(value),
});

export const ROUTES = [
  {
    id: 'param',
    label: 'GET /files/*',
    allowed: { method: 'GET', path: '/files/public/docs/report.txt' },
    traversal: { method: 'GET', path: '/files/public/../../etc/passwd' },
  },
  {
    id: 'body',
    label: 'POST /move',
    allowed: {
      method: 'POST',
      path: '/move',
      ...json({ from: 'uploads/incoming/a.txt', to: 'uploads/archive/a.txt' }),
    },
    traversal: {
      method: 'POST',
      path: '/move',
      ...json({ from: '../../etc/passwd', to: 'uploads/archive/a.txt' }),
    },
  },
];
