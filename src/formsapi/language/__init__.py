"""The form language: what a form is made of and what its answers must be.

Blocks (the questions and layout), the definition (hidden fields,
variables, rules and endings), the JSON Logic evaluator, the walk through
a form's pages, translations, the JSON Schema of the answers, what a form
costs to check and draw, and `Compiled`: one version ready for every
reader. Pure: no database, no HTTP, no settings. It imports only
`formsapi.kit`; the form resource (`formsapi.form`), the intake, the hosted
page, summaries and the builder import it.
"""
