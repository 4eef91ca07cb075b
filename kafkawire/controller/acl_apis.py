"""CreateAcls, DescribeAcls, DeleteAcls (v1-3, as Kafka 4.x), AlterUserScramCredentials and
AlterClientQuotas (kafkawire.controller.client_quotas), as the metadata controller answers them.
Without an authorizer (authorizer.class.name) the ACL APIs answer SECURITY_DISABLED, as Kafka's
AclApis; with one the controller writes the ACL records.
AlterUserScramCredentials and AlterClientQuotas are answered with or without an authorizer. The
node puts its authorizer's checks in front of all five."""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafkawire.net.authorizer import error_response_for
from kafkawire.protocol.handler import ApiHandler

from . import acls
from .client_quotas import ALTER_CLIENT_QUOTAS, alter_client_quotas
from .client_quotas import refusal as client_quotas_refusal
from .errors import ApiError
from .scram import alter_user_scram_credentials

if TYPE_CHECKING:       # controller.py imports this module to build its handlers
    from .controller import MetadataController

ALTER_USER_SCRAM_CREDENTIALS = 51


def acl_handlers(controller: MetadataController) -> dict[int, ApiHandler]:
    async def change(ctx, request):
        if not controller.acls_enabled:
            return acls.security_disabled(ctx.api_key, request)
        make = acls.create_acls if ctx.api_key == acls.CREATE_ACLS else acls.delete_acls
        try:
            # No deadline, as Kafka's ClusterMetadataAuthorizer gives the controller none.
            response, _ = await controller.write(lambda: make(controller.state.image.acls, request))
        except ApiError as exc:
            return error_response_for(ctx.api_key, ctx, request, exc.code, exc.message)
        return response

    async def describe(ctx, request):
        if not controller.acls_enabled:
            return acls.security_disabled(ctx.api_key, request)
        return acls.describe_acls(controller.image.acls, request)

    async def alter_scram(ctx, request):
        def generate():     # from the image of the write's turn, not of the request's arrival
            image = controller.state.image
            return alter_user_scram_credentials(request, image.scram, image.metadata_version)
        try:
            response, _ = await controller.write(generate)     # no deadline, as in Kafka's ControllerApis
        except ApiError as exc:
            return error_response_for(ctx.api_key, ctx, request, exc.code, exc.message)
        return response

    async def alter_quotas(ctx, request):
        try:      # from the image of the write's turn; no deadline, as in Kafka's ControllerApis
            response, _ = await controller.write(lambda: alter_client_quotas(request, controller.state.image.client_quotas))
        except ApiError as exc:
            return client_quotas_refusal(request, exc.code)
        return response

    return {acls.DESCRIBE_ACLS: ApiHandler(describe, min_version=1),
            acls.CREATE_ACLS: ApiHandler(change, min_version=1),
            acls.DELETE_ACLS: ApiHandler(change, min_version=1),
            ALTER_USER_SCRAM_CREDENTIALS: ApiHandler(alter_scram),
            ALTER_CLIENT_QUOTAS: ApiHandler(alter_quotas)}
