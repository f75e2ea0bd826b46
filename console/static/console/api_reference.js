// The API reference page (templates/account/api_reference.html): Swagger UI on the console's
// own OpenAPI document. A file, not an inline script: the Content-Security-Policy allows only
// the console's own scripts.
window.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("swagger-ui");
  if (!root || typeof SwaggerUIBundle !== "function") return;
  const csrfToken = root.dataset.csrfToken;
  SwaggerUIBundle({
    url: root.dataset.openapiUrl,
    domNode: root,
    deepLinking: true,
    // No call to swagger.io's validator (its default): the page reaches only the console.
    validatorUrl: null,
    // "Try it out" from the browser uses the session, whose writes need the CSRF token, as the
    // console's forms do.
    requestInterceptor: (request) => {
      request.headers["X-CSRFToken"] = csrfToken;
      return request;
    },
  });
});
