"""Forms as an organization's resource: their CRUD over /v1, versions,
drafts, limits and quotas, invitations and the gallery. What a form's
blocks and rules mean is the form language's (`formsapi.language`)."""
